// Command checktree fails when the repository tracks a file that should not
// be committed: anything larger than 1 MiB, or an executable binary. Build
// output belongs in bin/ (ignored) and large data outside the repository.
//
// Usage (from anywhere inside the clone): go run ./hack/checktree
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/hack/checktree/tree"
)

func main() {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checktree: not inside a git clone:", err)
		os.Exit(2)
	}
	findings, err := tree.CheckRepository(filepath.Clean(strings.TrimSpace(string(root))))
	if err != nil {
		fmt.Fprintln(os.Stderr, "checktree:", err)
		os.Exit(2)
	}
	if len(findings) == 0 {
		return
	}
	for _, f := range findings {
		fmt.Fprintln(os.Stderr, f)
	}
	fmt.Fprintln(os.Stderr, tree.Advice)
	os.Exit(1)
}
