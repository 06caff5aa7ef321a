package azure_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

func TestReadConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("cloud.json", `{"name":"x"}`)
	big := write("big", strings.Repeat("a", 1<<20+1))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason, path, want, wantErr string
	}{
		{"a regular file", ok, `{"name":"x"}`, ""},
		{"a symbolic link to one (ConfigMap mounts)", link, `{"name":"x"}`, ""},
		{"a directory", dir, "", dir + " is not a regular file"},
		{"a FIFO would block the start", fifo, "", fifo + " is not a regular file"},
		{"too large", big, "", big + " has 1048577 bytes, more than the 1048576 a configuration file may have"},
		{"missing", filepath.Join(dir, "nope"), "", "stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
	}
	for _, c := range cases {
		got, err := azure.ReadConfigFile(c.path)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if diff := cmp.Diff(c.wantErr, gotErr); diff != "" {
			t.Errorf("%s: error (-want +got):\n%s", c.reason, diff)
		}
		if diff := cmp.Diff(c.want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}
