package privateendpoint

import (
	"strings"
	"testing"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
)

// TestWaitingForOthers: a release waits only when nobody live keeps the
// zone and someone being deleted still holds something in it, and its
// message names objects of its own namespace only (at most five), counting
// those of other namespaces, so that one tenant's condition never names
// another tenant's objects.
func TestWaitingForOthers(t *testing.T) {
	zone := dns.Zone{Name: "hcp.internal"}
	for _, tc := range []struct {
		name     string
		u        users
		wait     bool
		say, not []string
	}{
		{name: "nobody", u: users{}, wait: false},
		{name: "a live object keeps the zone", u: users{live: true, leaving: []string{"a"}}, wait: false},
		{name: "same namespace", u: users{leaving: []string{"a", "b"}}, wait: true, say: []string{"waiting for a, b,"}},
		{name: "more than five", u: users{leaving: []string{"hc1", "hc2", "hc3", "hc4", "hc5", "hc6", "hc7"}}, wait: true, say: []string{"hc1, hc2, hc3, hc4, hc5 and 2 more"}, not: []string{"hc6", "hc7"}},
		{name: "other namespaces counted", u: users{leavingElsewhere: 3}, wait: true, say: []string{"waiting for 3 object(s) in other namespaces"}},
		{name: "both", u: users{leaving: []string{"a"}, leavingElsewhere: 1}, wait: true, say: []string{"waiting for a and 1 object(s) in other namespaces"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.waiting(); got != tc.wait {
				t.Fatalf("waiting() = %v, want %v", got, tc.wait)
			}
			if !tc.wait {
				return
			}
			saysExactly(t, waitingMessage(zone, tc.u), tc.say, tc.not)
		})
	}
}

func saysExactly(t *testing.T, msg string, say, not []string) {
	t.Helper()
	for _, s := range say {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not say %q", msg, s)
		}
	}
	for _, s := range not {
		if strings.Contains(msg, s) {
			t.Errorf("message %q says %q", msg, s)
		}
	}
}
