package main

import (
	"archive/tar"
	"context"
	"debug/buildinfo"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const repoRoot = "../.."

// TestImage builds the image from the repository exactly as `make image`
// does and checks what users run: the entrypoint, the non-root user, the
// labels, that nothing but the binary is in it (no shell), that the binary
// embeds CA roots (the base has none), and that it starts.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	out, oci := filepath.Join(dir, "image.tar"), filepath.Join(dir, "oci")
	var stdout, stderr strings.Builder
	args := []string{"--context", repoRoot, "--out", out, "--oci-layout", oci, "--version", "v0.0.0-test", "--revision", "abc123"}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("image build exited %d:\n%s", code, stderr.String())
	}

	// The tarball is what docker/podman load and crane push read.
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatalf("reading the tarball back: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	type config struct {
		OS, Arch, User string
		Entrypoint     []string
		Cmd            []string
		Labels         map[string]string
	}
	want := config{
		OS: "linux", Arch: "amd64", User: "65532:65532", Entrypoint: []string{"/azure-private-endpoint-operator"},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "azure-private-endpoint-operator",
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.version":  "v0.0.0-test",
			"org.opencontainers.image.revision": "abc123",
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	got := config{OS: cf.OS, Arch: cf.Architecture, User: cf.Config.User, Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd, Labels: cf.Config.Labels}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image config (-want +got):\n%s", diff)
	}

	// The files in the image: the binary and /tmp, nothing else (no shell).
	files, binary := imageFiles(t, img.Layers)
	if diff := cmp.Diff([]string{"azure-private-endpoint-operator", "tmp/"}, files); diff != "" {
		t.Errorf("files in the image (-want +got):\n%s", diff)
	}
	bin := filepath.Join(dir, "azure-private-endpoint-operator")
	if err := os.WriteFile(bin, binary, 0o755); err != nil { //nolint:gosec // an executable we run below
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if diff := cmp.Diff(map[string]string{"CGO_ENABLED": "0", "GOOS": "linux", "-trimpath": "true"}, map[string]string{
		"CGO_ENABLED": settings["CGO_ENABLED"], "GOOS": settings["GOOS"], "-trimpath": settings["-trimpath"],
	}); diff != "" {
		t.Errorf("build settings of the binary (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" }) {
		t.Errorf("the binary does not embed golang.org/x/crypto/x509roots/fallback: it could not verify Azure's certificates on an empty base")
	}
	help, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("the image's binary does not start: %v\n%s", err, help)
	}
	if !strings.Contains(string(help), "-management-cluster-name") {
		t.Errorf("--help does not list the operator's flags:\n%s", help)
	}

	// The OCI layout holds the same image.
	p, err := layout.FromPath(oci)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("OCI layout: want one manifest, got %+v", m.Manifests)
	}
	fromLayout, err := p.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// The tarball keeps the config and layers, not the manifest (docker's
	// format rebuilds it), so the two are compared by their config.
	tarConfig, _ := img.ConfigName()
	layoutConfig, _ := fromLayout.ConfigName()
	if tarConfig != layoutConfig {
		t.Errorf("OCI layout: config %s, the tarball's %s", layoutConfig, tarConfig)
	}
}

// imageFiles lists the paths in the image's layers and returns the
// operator binary's content.
func imageFiles(t *testing.T, layers func() ([]v1.Layer, error)) ([]string, []byte) {
	t.Helper()
	ls, err := layers()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	var binary []byte
	for _, l := range ls {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, h.Name)
			if h.Name == "azure-private-endpoint-operator" {
				if binary, err = io.ReadAll(tr); err != nil {
					t.Fatal(err)
				}
			}
		}
		_ = rc.Close()
	}
	slices.Sort(files)
	return files, binary
}

// TestContextIsWhatTheDockerfileNeeds: the clean context holds every
// directory the Dockerfile copies, the operator's packages and nothing of
// the work tree's build output, docs or tests of other parts.
func TestContextIsWhatTheDockerfileNeeds(t *testing.T) {
	dst := t.TempDir()
	copied, err := CopyContext(repoRoot, dst)
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range dockerfileSources(string(dockerfile)) {
		if !slices.ContainsFunc(copied, func(p string) bool { return p == src || strings.HasPrefix(p, src+"/") }) {
			t.Errorf("the Dockerfile copies %s, which .dockerignore does not admit", src)
		}
	}
	for _, p := range copied {
		for _, bad := range []string{"bin/", ".git/", "docs/", "charts/", "hack/", "test/"} {
			if strings.HasPrefix(p, bad) {
				t.Errorf("the build context holds %s (under %s)", p, bad)
			}
		}
	}
	for _, need := range []string{"go.mod", "go.sum", "api/v1alpha1/groupversion_info.go", "cmd/azure-private-endpoint-operator/main.go"} {
		if !slices.Contains(copied, need) {
			t.Errorf("the build context lacks %s", need)
		}
	}
}

// dockerfileSources lists what the Dockerfile's COPY lines take from the
// build context (not from other stages).
func dockerfileSources(dockerfile string) []string {
	var srcs []string
	for _, m := range regexp.MustCompile(`(?m)^COPY (?:--\S+ )*(.+) \S+$`).FindAllStringSubmatch(dockerfile, -1) {
		if strings.HasPrefix(m[0], "COPY --from") {
			continue
		}
		for _, src := range strings.Fields(m[1]) {
			srcs = append(srcs, strings.TrimSuffix(src, "/"))
		}
	}
	return srcs
}

// TestIgnoreSemantics pins the .dockerignore rules CopyContext applies on a
// small tree: last match wins, ! re-admits, a directory pattern covers what
// is below it.
func TestIgnoreSemantics(t *testing.T) {
	src := t.TempDir()
	for _, f := range []string{"go.mod", "README.md", "cmd/x/main.go", "cmd/x/main_test.go", "bin/tool", "internal/a/a.go", "internal/a/testdata/big.bin"} {
		p := filepath.Join(src, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ignore := "*\n!go.mod\n!cmd/\n!internal/\ninternal/**/testdata\n**/*_test.go\n"
	if err := os.WriteFile(filepath.Join(src, ".dockerignore"), []byte(ignore), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := CopyContext(src, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"cmd/x/main.go", "go.mod", "internal/a/a.go"}, got); diff != "" {
		t.Errorf("admitted files (-want +got):\n%s", diff)
	}
}
