package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

const (
	// DefaultRepository names the image in the tarball by default.
	DefaultRepository = "azure-private-endpoint-operator"
	// Binary is the operator's path in the image, and its entrypoint.
	Binary = "/azure-private-endpoint-operator"
	// User is the numeric non-root user and group the operator runs as
	// (the "nonroot" user of distroless images; the chart's
	// securityContext names the same).
	User = "65532:65532"
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/giantswarm/azure-private-endpoint-operator"
)

// Options say what to build.
type Options struct {
	Context, Out, OCILayout, Tag, Version, Revision, GOARCH string
}

// Result describes the built image.
type Result struct {
	Digest v1.Hash
	Image  v1.Image
}

// Build copies the admitted context, builds the binary in it, and writes
// the image.
func Build(ctx context.Context, o Options) (*Result, error) {
	ref, err := name.NewTag(o.Tag)
	if err != nil {
		return nil, fmt.Errorf("--tag %q: %w", o.Tag, err)
	}
	work, err := os.MkdirTemp("", "apeo-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }()
	clean := filepath.Join(work, "context")
	if _, err := CopyContext(o.Context, clean); err != nil {
		return nil, err
	}
	bin := filepath.Join(work, "azure-private-endpoint-operator")
	if err := buildBinary(ctx, clean, bin, o); err != nil {
		return nil, err
	}
	img, err := assemble(bin, o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o750); err != nil {
		return nil, err
	}
	if err := tarball.WriteToFile(o.Out, ref, img); err != nil {
		return nil, fmt.Errorf("writing %s: %w", o.Out, err)
	}
	if o.OCILayout != "" {
		if err := os.RemoveAll(o.OCILayout); err != nil {
			return nil, err
		}
		p, err := layout.Write(o.OCILayout, empty.Index)
		if err != nil {
			return nil, err
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.String()})); err != nil {
			return nil, fmt.Errorf("writing the OCI layout: %w", err)
		}
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	return &Result{Digest: d, Image: img}, nil
}

// CopyContext copies into dst the files of src that src/.dockerignore
// admits, with the semantics of docker build (moby's pattern matcher), and
// returns their slash-separated paths. The image is built from exactly
// this, so the Dockerfile's context and the image cannot drift apart.
func CopyContext(src, dst string) ([]string, error) {
	f, err := os.Open(filepath.Join(src, ".dockerignore")) //nolint:gosec // the repository's own file
	if err != nil {
		return nil, err
	}
	patterns, err := ignorefile.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading .dockerignore: %w", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf(".dockerignore: %w", err)
	}
	var copied []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, admit, err := admitted(pm, src, p, d)
		if err != nil || !admit {
			return err
		}
		copied = append(copied, rel)
		return copyFile(p, filepath.Join(dst, filepath.FromSlash(rel)))
	})
	if err != nil {
		return nil, fmt.Errorf("copying the build context: %w", err)
	}
	if len(copied) == 0 {
		return nil, errors.New(".dockerignore admits no file")
	}
	return copied, nil
}

// admitted says whether the file at p goes into the context, and returns
// its slash-separated path relative to src. For a directory it returns
// filepath.SkipDir when nothing below it can be admitted.
func admitted(pm *patternmatcher.PatternMatcher, src, p string, d fs.DirEntry) (string, bool, error) {
	rel, err := filepath.Rel(src, p)
	if err != nil || rel == "." {
		return "", false, err
	}
	rel = filepath.ToSlash(rel)
	ignored, err := pm.MatchesOrParentMatches(rel)
	if err != nil {
		return "", false, err
	}
	if d.IsDir() {
		// Walk into an ignored directory only when an exclusion may
		// re-admit something below it.
		if ignored && !pm.Exclusions() {
			return "", false, filepath.SkipDir
		}
		return "", false, nil
	}
	return rel, !ignored && d.Type().IsRegular(), nil
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return err
	}
	in, err := os.Open(src) //nolint:gosec // a file of the build context
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600) //nolint:gosec // inside our temporary directory
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// buildBinary builds a static, reproducible operator binary in the clean
// context, with nothing of the caller's work tree or GOFLAGS.
func buildBinary(ctx context.Context, dir, out string, o Options) error {
	ldflags := "-s -w -buildid= -X main.version=" + o.Version
	cmd := exec.CommandContext(ctx, "go", "build", //nolint:gosec // G204: the go tool building this repository's operator
		"-trimpath", "-mod=readonly", "-ldflags", ldflags, "-o", out, "./cmd/azure-private-endpoint-operator")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.GOARCH, "GOFLAGS=", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build in the clean context (only what .dockerignore admits): %w\n%s", err, stderr.String())
	}
	return nil
}

// assemble puts the binary on an empty base.
func assemble(bin string, o Options) (v1.Image, error) {
	data, err := os.ReadFile(bin) //nolint:gosec // the binary we just built
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	// /tmp for libraries that want a temporary directory (the chart mounts
	// an emptyDir there, since the root filesystem is read-only).
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(Binary, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: epoch}, CreatedBy: "hack/image: " + path.Base(Binary), Comment: "static operator binary",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = o.GOARCH, "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{Binary}
	cf.Config.User = User
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    "azure-private-endpoint-operator",
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if o.Revision != "" {
		cf.Config.Labels["org.opencontainers.image.revision"] = o.Revision
	}
	return mutate.ConfigFile(img, cf)
}
