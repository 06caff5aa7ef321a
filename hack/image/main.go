// Command image builds the operator's OCI image without a container engine:
// it copies exactly the files .dockerignore admits into a clean build
// context, builds a static binary there, and puts it on an empty base
// (no shell, no package manager), running as user 65532 with the CA roots
// embedded in the binary. The result is a tarball that `docker load`,
// `podman load` and `crane push` accept, and optionally an OCI layout.
//
// Usage: go run . --context ../.. --out ../../bin/image.tar
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	os.Exit(runWithSignals())
}

// runWithSignals is run, stopped by Ctrl-C; its deferred cleanup runs
// before main exits.
func runWithSignals() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o Options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Context, "context", ".", "The repository root; only what its .dockerignore admits is used.")
	fs.StringVar(&o.Out, "out", "bin/image.tar", "Where to write the image tarball (docker load, podman load, crane push).")
	fs.StringVar(&o.OCILayout, "oci-layout", "", "Also write the image as an OCI image layout directory here.")
	fs.StringVar(&o.Tag, "tag", DefaultRepository+":dev", "Reference recorded in the tarball (what docker load names the image).")
	fs.StringVar(&o.Version, "version", "dev", "Version, for the binary and the org.opencontainers.image.version label.")
	fs.StringVar(&o.Revision, "revision", "", "Source revision, for the org.opencontainers.image.revision label.")
	fs.StringVar(&o.GOARCH, "arch", "amd64", "Target architecture (GOARCH).")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "image: unexpected arguments %q\n", fs.Args())
		return 2
	}
	res, err := Build(ctx, o)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "image: %v\n", err)
		return 1
	}
	_, _ = fmt.Fprintf(stdout, "image %s (%s) written to %s\n", o.Tag, res.Digest, o.Out)
	if o.OCILayout != "" {
		_, _ = fmt.Fprintf(stdout, "OCI layout written to %s\n", o.OCILayout)
	}
	return 0
}
