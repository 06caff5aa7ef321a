package conformance_test

import (
	"flag"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim/conformance"
)

// report prints every difference, allowed or not (make fidelity).
var report = flag.Bool("report", false, "print every difference between Azure's recorded answers and azuresim's")

// maxAllowed bounds the allow-list: a difference is fixed in the emulator,
// not listed, unless there is a reason it cannot be.
const maxAllowed = 20

// TestConformance replays each fixture against a fresh emulator and fails
// on a difference the allow-list does not give a reason for, and on an
// allow-list entry no difference needs any more.
func TestConformance(t *testing.T) {
	fixtures, err := conformance.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := conformance.LoadAllowList("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) >= maxAllowed {
		t.Errorf("the allow-list has %d entries; fewer than %d, each with its reason", len(allowed), maxAllowed)
	}
	var lines []string
	total, accepted := 0, 0
	for _, fx := range fixtures {
		srv := azuresim.New(azuresim.Options{NoAuth: true})
		if err := srv.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		diffs, err := conformance.Replay(http.DefaultClient, srv.URL(), fx)
		_ = srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			total++
			if a := conformance.Match(allowed, d); a != nil {
				accepted++
				lines = append(lines, fmt.Sprintf("  allowed  %s\n           (%s)", d, a.Reason))
				continue
			}
			lines = append(lines, "  DIFFERS  "+d.String())
			t.Errorf("azuresim answers otherwise than Azure: %s", d)
		}
	}
	for _, a := range conformance.Unused(allowed) {
		t.Errorf("allow-list entry %q matches no difference any more: remove it", a.Prefix)
	}
	if *report || t.Failed() {
		t.Logf("%d fixtures, %d differences (%d allowed by %d entries):\n%s", len(fixtures), total, accepted, len(allowed), strings.Join(lines, "\n"))
	}
}
