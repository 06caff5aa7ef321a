// Package tree checks the files a git repository tracks for what must never
// be committed: files over MaxSize and executable binaries (ELF, Mach-O, PE,
// or any file with NUL bytes and the executable bit).
package tree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MaxSize is the largest file the repository may track.
const MaxSize = 1 << 20

// Advice tells whoever sees a finding what to do about it.
const Advice = `Build output belongs in bin/ (ignored by .gitignore), large data outside the repository.
Remove the file from the index with 'git rm --cached <path>' and add it to .gitignore if a build makes it.`

// Finding is one tracked file that must not be tracked, and why.
type Finding struct {
	Path   string
	Reason string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s", f.Path, f.Reason) }

// CheckRepository checks every file git tracks under root, as it is in the
// work tree (a tracked file deleted from the work tree is skipped).
func CheckRepository(root string) ([]Finding, error) {
	cmd := exec.Command("git", "-C", root, "ls-files", "-z") //nolint:gosec // G204: git with the clone the caller checks
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing tracked files: %w", err)
	}
	var paths []string
	for p := range strings.SplitSeq(strings.TrimRight(string(out), "\x00"), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return CheckFiles(root, paths)
}

// CheckFiles checks the named files, relative to root.
func CheckFiles(root string, paths []string) ([]Finding, error) {
	var findings []Finding
	for _, p := range paths {
		f, err := checkFile(filepath.Join(root, p))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if f != "" {
			findings = append(findings, Finding{Path: p, Reason: f})
		}
	}
	return findings, nil
}

// checkFile returns why the file must not be tracked, or "".
func checkFile(path string) (string, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", nil
	}
	f, err := os.Open(path) //nolint:gosec // the path is a file git tracks in this repository
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	head := make([]byte, 8000) // git's own window for telling binary from text
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	head = head[:n]
	if kind := executableFormat(head); kind != "" {
		return "an executable binary (" + kind + ")", nil
	}
	if info.Size() > MaxSize {
		return fmt.Sprintf("%d bytes, over the %d-byte limit for tracked files", info.Size(), MaxSize), nil
	}
	if info.Mode()&0o111 != 0 && bytes.IndexByte(head, 0) >= 0 {
		return "a binary file with the executable bit set", nil
	}
	return "", nil
}

// executableFormat names the executable format head starts with, or "".
func executableFormat(head []byte) string {
	magics := []struct {
		kind  string
		magic []byte
	}{
		{"ELF", []byte{0x7f, 'E', 'L', 'F'}},
		{"Mach-O", []byte{0xcf, 0xfa, 0xed, 0xfe}},
		{"Mach-O", []byte{0xce, 0xfa, 0xed, 0xfe}},
		{"Mach-O universal", []byte{0xca, 0xfe, 0xba, 0xbe}},
		{"WebAssembly", []byte{0x00, 'a', 's', 'm'}},
	}
	for _, m := range magics {
		if bytes.HasPrefix(head, m.magic) {
			return m.kind
		}
	}
	// PE: "MZ", and the PE header the DOS stub points at.
	if len(head) >= 0x40 && head[0] == 'M' && head[1] == 'Z' {
		off := int(head[0x3c]) | int(head[0x3d])<<8 | int(head[0x3e])<<16 | int(head[0x3f])<<24
		if off >= 0 && off+4 <= len(head) && bytes.Equal(head[off:off+4], []byte{'P', 'E', 0, 0}) {
			return "PE"
		}
	}
	return ""
}
