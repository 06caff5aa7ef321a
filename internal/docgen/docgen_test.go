package docgen

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReplace(t *testing.T) {
	begin, end := markers("x")
	cases := []struct {
		reason, doc, want, wantErr string
	}{
		{"replaces only the block", "a\n" + begin + "old\n" + end + "\nb\n", "a\n" + begin + "new\n" + end + "\nb\n", ""},
		{"missing begin marker", "a\n" + end, "", "no \"<!-- BEGIN GENERATED: x (make generate) -->\" marker"},
		{"missing end marker", begin + "old\n", "", "no \"<!-- END GENERATED: x -->\" marker"},
	}
	for _, c := range cases {
		got, err := Replace(c.doc, "x", "new")
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if diff := cmp.Diff(c.wantErr, gotErr); diff != "" {
			t.Errorf("%s: error (-want +got):\n%s", c.reason, diff)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}

func TestFlagTable(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Duration("wait", time.Minute, "How long to\n   wait | at most.")
	fs.String("name", "", "A name.")
	want := "| Flag | Default | Meaning |\n| --- | --- | --- |\n" +
		"| `--name` | (none) | A name. |\n" +
		"| `--wait` | `1m0s` | How long to wait \\| at most. |\n"
	if diff := cmp.Diff(want, FlagTable(fs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCRDReference(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names: {kind: Thing, plural: things, shortNames: [th]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {jsonPath: .status.ip, name: IP, type: string}
    - {jsonPath: .status.reason, name: Reason, type: string, priority: 1}
    schema:
      openAPIV3Schema:
        description: |-
          Thing is a
          thing.
        type: object
        properties:
          spec:
            type: object
            required: [name]
            x-kubernetes-validations:
            - {rule: "self.name != 'x'", message: name must not be x}
            properties:
              name: {type: string, description: Name of it., maxLength: 80}
              mode: {type: string, enum: [A, B], default: A}
              ips:
                type: array
                x-kubernetes-list-type: set
                maxItems: 8
                items: {type: string, format: ipv4}
          status:
            type: object
            properties:
              ip: {type: string}
`
	got, err := CRDReference([]byte(crd))
	if err != nil {
		t.Fatal(err)
	}
	want := "### `Thing` (`example.com/v1`, namespaced, short name `th`)\n\n" +
		"Thing is a thing.\n\n" +
		"`kubectl get` columns: `IP`, `REASON` (with `-o wide`).\n\n" +
		"| Field | Type | Default | Meaning and rules |\n| --- | --- | --- | --- |\n" +
		"| `spec` | object |  |  |\n" +
		"| `spec.ips` | string (ipv4) list |  | (at most 8 items; no repeats) |\n" +
		"| `spec.mode` | string | `\"A\"` | (one of `A`, `B`) |\n" +
		"| `spec.name` | string | (required) | Name of it. (at most 80 characters) |\n" +
		"| `status` | object |  |  |\n" +
		"| `status.ip` | string |  |  |\n" +
		"\nRules the API server enforces at admission (CEL):\n\n" +
		"- `spec`: name must not be x\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestAPIReferenceIsCurrent keeps docs/api.md's generated CRD reference
// equal to config/crd/bases.
func TestAPIReferenceIsCurrent(t *testing.T) {
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var parts []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := CRDReference(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		parts = append(parts, ref)
	}
	Check(t, "../../docs/api.md", "crd-reference", strings.Join(parts, "\n"))
}
