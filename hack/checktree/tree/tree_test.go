package tree

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRepositoryIsClean is the guard make test runs: this clone tracks no
// file over 1 MiB and no executable binary.
func TestRepositoryIsClean(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("not inside a git clone: %v", err)
	}
	findings, err := CheckRepository(strings.TrimSpace(string(root)))
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) > 0 {
		t.Fatalf("tracked files that must not be committed:\n%v\n%s", findings, Advice)
	}
}

// TestGuardFailsOnAddedBinary builds a real executable, tracks it in a new
// repository beside a script and a large file, and expects exactly those
// findings.
func TestGuardFailsOnAddedBinary(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	write := func(name string, data []byte, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", []byte("package main\n\nfunc main() {}\n"), 0o644)
	write("go.mod", []byte("module example.com/x\n\ngo 1.22\n"), 0o644)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "x"), ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	write("run.sh", []byte("#!/bin/sh\necho ok\n"), 0o755)
	write("blob.bin", []byte("\x00\x01data"), 0o755)
	write("big.txt", []byte(strings.Repeat("a", MaxSize+1)), 0o644)
	write("image.png", []byte("\x89PNG\r\n\x1a\n\x00\x00"), 0o644)
	git("add", ".")

	findings, err := CheckRepository(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Finding{
		{Path: "big.txt", Reason: "1048577 bytes, over the 1048576-byte limit for tracked files"},
		{Path: "blob.bin", Reason: "a binary file with the executable bit set"},
		{Path: "x", Reason: "an executable binary (ELF)"},
	}
	if diff := cmp.Diff(want, findings); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

func TestExecutableFormat(t *testing.T) {
	pe := make([]byte, 0x84)
	copy(pe, "MZ")
	pe[0x3c] = 0x80
	copy(pe[0x80:], "PE\x00\x00")
	cases := []struct {
		reason string
		head   []byte
		want   string
	}{
		{"ELF magic", []byte("\x7fELF\x02\x01"), "ELF"},
		{"64-bit Mach-O", []byte{0xcf, 0xfa, 0xed, 0xfe, 7}, "Mach-O"},
		{"PE with its header", pe, "PE"},
		{"MZ text without a PE header is text", []byte("MZ is a postcode" + strings.Repeat(" ", 80)), ""},
		{"shell script", []byte("#!/bin/sh\n"), ""},
		{"empty file", nil, ""},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, executableFormat(c.head)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}
