package azure_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

func TestTags(t *testing.T) {
	got := azure.Tags(map[string]string{"costCenter": "42", "env": "prod"}, map[string]string{"env": "dev", "team": "a"})
	if diff := cmp.Diff(map[string]string{"costCenter": "42", "env": "dev", "team": "a"}, got); diff != "" {
		t.Errorf("the object's tags go over the defaults (-want +got):\n%s", diff)
	}
	if azure.Tags(nil, nil) != nil {
		t.Error("no tags should be nil")
	}

	observed := map[string]*string{"Env": new("old"), "someone-elses": new("x"), "owner": new("forged")}
	merged := azure.MergeTags(observed, map[string]string{"env": "dev", "owner": "mine?"}, "owner", "ns/name")
	want := map[string]*string{"env": new("dev"), "someone-elses": new("x"), "owner": new("ns/name")}
	if diff := cmp.Diff(want, merged); diff != "" {
		t.Errorf("merge: others' tags stay, a name of another case is replaced, the owner tag wins (-want +got):\n%s", diff)
	}

	if d := azure.TagsDiffer(map[string]*string{"ENV": new("dev"), "other": new("y")}, map[string]string{"env": "dev", "team": "a", "other": "z"}); !cmp.Equal(d, []string{"other", "team"}) {
		t.Errorf("differ: %v", d)
	}

	for _, c := range []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"", map[string]string{}, false},
		{" costCenter = 42 , env=prod,", map[string]string{"costCenter": "42", "env": "prod"}, false},
		{"empty=", map[string]string{"empty": ""}, false},
		{"novalue", nil, true},
		{"=v", nil, true},
		{"a/b=v", nil, true},
		{"a%b=v", nil, true},
	} {
		got, err := azure.ParseTags(c.in)
		if (err != nil) != c.wantErr || (!c.wantErr && !cmp.Equal(got, c.want)) {
			t.Errorf("ParseTags(%q) = %v, %v", c.in, got, err)
		}
	}
}
