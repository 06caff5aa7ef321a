package docgen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// reasonDirs are the packages whose constant reasons go on objects,
// conditions and Events (the emulators' own codes and states are not the
// operator's reasons).
var reasonDirs = []string{
	"../azure",
	"../controller",
	"../dnsengine",
	"../explain",
}

// TestEveryReasonIsDocumented: every constant reason the operator writes
// (a string constant named Reason…) is named, in backquotes, in
// docs/operations.md, so a person paged at night finds what it means.
func TestEveryReasonIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, dir := range reasonDirs {
		if err := constantReasons(dir, reasons); err != nil {
			t.Fatal(err)
		}
	}
	if len(reasons) < 100 {
		t.Fatalf("found %d reasons; the parser missed the constants", len(reasons))
	}
	var missing []string
	for value, where := range reasons {
		if !strings.Contains(string(doc), "`"+value+"`") {
			missing = append(missing, value+" ("+where+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("reasons docs/operations.md does not name (add them to its tables):\n%s", strings.Join(missing, "\n"))
	}
}

// constantReasons adds the values of the string constants named Reason…
// declared in the non-test Go files under dir to out (value → where).
func constantReasons(dir string, out map[string]string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				addReasons(spec.(*ast.ValueSpec), path, out)
			}
		}
		return nil
	})
}

// addReasons adds the string literals of a constant spec whose names
// start with Reason.
func addReasons(v *ast.ValueSpec, path string, out map[string]string) {
	for i, name := range v.Names {
		if !strings.HasPrefix(name.Name, "Reason") || i >= len(v.Values) {
			continue
		}
		lit, ok := v.Values[i].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		if s, err := strconv.Unquote(lit.Value); err == nil && s != "" {
			out[s] = strings.TrimPrefix(path, "../") + " " + name.Name
		}
	}
}
