// Package docgen generates the parts of docs/ that can be generated (the
// flag table, the CRD reference) and keeps them current: a generated block
// sits between marker comments in a hand-written page, and tests compare it
// with what the code says now. `make generate` rewrites the blocks.
package docgen

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// UpdateEnv is the environment variable that, set to 1, makes Check rewrite the generated block instead of
// failing (make generate sets it).
const UpdateEnv = "APEO_UPDATE_DOCS"

func markers(name string) (begin, end string) {
	return "<!-- BEGIN GENERATED: " + name + " (make generate) -->\n", "<!-- END GENERATED: " + name + " -->"
}

// Replace returns doc with the block called name set to content.
func Replace(doc, name, content string) (string, error) {
	begin, end := markers(name)
	before, rest, ok := strings.Cut(doc, begin)
	if !ok {
		return "", fmt.Errorf("no %q marker", strings.TrimSpace(begin))
	}
	_, after, ok := strings.Cut(rest, end)
	if !ok {
		return "", fmt.Errorf("no %q marker", end)
	}
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return before + begin + content + end + after, nil
}

// Check fails t when the block called name in the file at path differs from
// content, or rewrites it when APEO_UPDATE_DOCS=1.
func Check(t testing.TB, path, name, content string) {
	t.Helper()
	doc, err := os.ReadFile(path) //nolint:gosec // a path inside this repository, from the test
	if err != nil {
		t.Fatal(err)
	}
	want, err := Replace(string(doc), name, content)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if want == string(doc) {
		return
	}
	if os.Getenv(UpdateEnv) == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil { //nolint:gosec // a document, world-readable like the rest of the clone
			t.Fatal(err)
		}
		t.Logf("updated %s (%s)", path, name)
		return
	}
	t.Errorf("%s: the generated block %q is out of date; run make generate", path, name)
}
