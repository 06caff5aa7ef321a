package clusterlink

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// TestMCCondition: the MC's GSWorkloadClusterEndpointsReady after a pass
// names what keeps workload clusters from the MC's entries, first what a
// person should act on first; True, with a limit near as its reason, when
// nothing does.
func TestMCCondition(t *testing.T) {
	const ingress = "mc-ingress-privatelink"
	held := func(names ...string) mcSeen {
		var eps []capz.PrivateEndpoint
		for _, n := range names {
			eps = append(eps, wcEntry(n))
		}
		return mcSeen{mc: mcWith(eps...), current: capz.Owned{Endpoints: onNodes(eps...)}, owners: ownedBy(capz.FieldManager, entryNamesOf(eps)...)}
	}
	with := func(s mcSeen, mutate func(*mcSeen)) mcSeen { mutate(&s); return s }
	active := func(names ...string) func(*mcSeen) {
		return func(s *mcSeen) {
			for _, n := range names {
				s.active = append(s.active, wc(n))
			}
		}
	}
	for _, tc := range []struct {
		reason             string
		seen               mcSeen
		use                map[string]int
		endpoints, conns   int
		status, want       string
		messageHas, hasNot []string
	}{
		{
			reason: "every WC has its entry",
			seen:   with(held("wc1", "wc2"), active("wc1", "wc2")), use: map[string]int{ingress: 2},
			status: "True", want: ReasonEndpointEntriesWritten,
		},
		{
			reason: "a new WC whose entry is about to be applied: nothing keeps it",
			seen:   with(held("wc1"), active("wc1", "wc2")),
			status: "True", want: ReasonEndpointEntriesWritten,
		},
		{
			reason: "the MC's entries at 90 % of the limit: True, the Warning as its reason",
			seen:   with(held("wc1"), active("wc1")), endpoints: 1,
			status: "True", want: ReasonEndpointLimitNear, messageHas: []string{"holds 1 private endpoint entries, the limit is 1"},
		},
		{
			reason: "an MC service at 90 % of its connections",
			seen:   with(held("wc1"), active("wc1")), use: map[string]int{ingress: 9, "mc-other": 1}, conns: 10,
			status: "True", want: ReasonServiceLimitNear, messageHas: []string{ingress + " has 9 connections"},
		},
		{
			reason: "a malformed MC",
			seen: with(held("wc1"), func(s *mcSeen) {
				active("wc1")(s)
				s.specErr = errors.New("spec.networkSpec.subnets[0].role: Unsupported value")
			}),
			status: "Unknown", want: ReasonInvalidSpec, messageHas: []string{"Unsupported value", "no new private endpoint entry"},
		},
		{
			reason: "Azure cannot be read: the new entries wait, named by cluster",
			seen:   with(held("wc1"), func(s *mcSeen) { active("wc1", "wc2")(s); s.azureErr = errors.New("connection refused") }),
			status: "Unknown", want: "Unknown", messageHas: []string{"1 workload cluster (org-a/wc2)", "cannot be read"}, hasNot: []string{"org-a/wc1"},
		},
		{
			reason: "a name someone else holds in the MC",
			seen: with(held(), func(s *mcSeen) {
				s.mc = mcWith(wcEntry("wc1"))
				s.owners = ownedBy("kubectl-edit", "wc1-api-privatelink-privateendpoint")
				active("wc1", "wc2")(s)
			}),
			status: "Unknown", want: ReasonPrivateEndpointNameTaken, messageHas: []string{"1 workload cluster (org-a/wc1)"},
		},
		{
			reason: "the MC's entries at the limit: the WCs refused are named",
			seen:   with(held("wc1"), active("wc1", "wc2", "wc3")), endpoints: 1,
			status: "Unknown", want: ReasonEndpointLimit, messageHas: []string{"2 workload clusters (org-a/wc2, org-a/wc3)", "holds 1 entries, the limit is 1"},
		},
		{
			reason: "a WC refused by a full MC service (its own reconcile says so)",
			seen:   with(held("wc1", "wc2"), func(s *mcSeen) { active("wc1", "wc2", "wc3")(s); s.serviceRefused = []string{"org-a/wc3"} }),
			use:    map[string]int{ingress: 2, "mc-other": 0}, conns: 2,
			status: "Unknown", want: ReasonServiceLimit, messageHas: []string{"1 workload cluster (org-a/wc3)", "private link service " + ingress + " for 1 workload cluster"},
		},
		{
			reason: "a WC waiting for a further ingress service (its own reconcile says so)",
			seen:   with(held("wc1", "wc2"), func(s *mcSeen) { active("wc1", "wc2", "wc3")(s); s.serviceWaiting = []string{"org-a/wc3"} }),
			use:    map[string]int{ingress: 2}, conns: 2,
			status: "Unknown", want: ReasonIngressServiceWaiting,
			messageHas: []string{"the endpoints of 1 workload cluster (org-a/wc3) to the management cluster wait for a further ingress",
				"-l " + ShardOfLabel + "=mc"},
		},
		{
			reason: "two WCs needing one name: the second is named",
			seen: with(held(), func(s *mcSeen) {
				s.active = []*capz.AzureCluster{
					wc("wc2", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
					wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
				}
			}),
			status: "Unknown", want: ReasonNameConflict, messageHas: []string{"1 workload cluster (org-a/wc2)"},
		},
		{
			reason: "many WCs refused: three named, the rest counted",
			seen:   with(held("wc1"), active("wc1", "wc2", "wc3", "wc4", "wc5", "wc6")), endpoints: 1,
			status: "Unknown", want: ReasonEndpointLimit, messageHas: []string{"5 workload clusters (org-a/wc2, org-a/wc3, org-a/wc4 and 2 more)"},
		},
		{
			reason: "a limit and a taken name: the taken name first",
			seen: with(held(), func(s *mcSeen) {
				s.mc = mcWith(wcEntry("wc1"))
				s.owners = ownedBy("kubectl-edit", "wc1-api-privatelink-privateendpoint")
				active("wc1", "wc2", "wc3")(s)
			}),
			endpoints: 2, // wc1 fits (its name is taken), wc2 and wc3 do not
			status:    "Unknown", want: ReasonPrivateEndpointNameTaken,
		},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			o := Options{AdoptFieldManagers: DefaultAdoptFieldManagers}
			o.MCEndpointLimit, o.MCServiceConnectionLimit = tc.endpoints, tc.conns
			got := mcCondition(&tc.seen, decideMC(&tc.seen, o), tc.use, o)
			if got.typ != ConditionGSWorkloadClusterEndpointsReady || got.status != tc.status || got.reason != tc.want || !got.exact {
				t.Errorf("got %s %s %s (exact %v), want %s %s", got.typ, got.status, got.reason, got.exact, tc.status, tc.want)
			}
			checkMessage(t, got.message, tc.messageHas, tc.hasNot)
		})
	}
}

// checkMessage: msg holds every string of has and none of hasNot.
func checkMessage(t *testing.T, msg string, has, hasNot []string) {
	t.Helper()
	for _, s := range has {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q lacks %q", msg, s)
		}
	}
	for _, s := range hasNot {
		if strings.Contains(msg, s) {
			t.Errorf("message %q names %q", msg, s)
		}
	}
}

// TestClusters: a message names three clusters and counts the rest.
func TestClusters(t *testing.T) {
	for keys, want := range map[string]string{
		"":                    "new workload clusters",
		"a/x":                 "1 workload cluster (a/x)",
		"b/y a/x b/y":         "2 workload clusters (a/x, b/y)",
		"a/1 a/2 a/3 a/4 a/5": "5 workload clusters (a/1, a/2, a/3 and 2 more)",
	} {
		if got := clusters(strings.Fields(keys)); got != want {
			t.Errorf("clusters(%q) = %q, want %q", keys, got, want)
		}
	}
}

func entryNamesOf(eps []capz.PrivateEndpoint) []string {
	out := make([]string, 0, len(eps))
	for _, ep := range eps {
		out = append(out, ep.Name)
	}
	return out
}

// TestConditionDue: a new status or reason of the MC's condition is
// written at once; a new message alone once the interval has passed since
// the last write, and the pass is told how long until then; in the
// v1beta2 form a new generation is a change like a new reason.
func TestConditionDue(t *testing.T) {
	const interval = 30 * time.Second
	last := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	have := wantCondition{typ: ConditionGSWorkloadClusterEndpointsReady, status: "Unknown", reason: ReasonIngressServiceWaiting,
		message: "the endpoints of 12 workload clusters (a, b, c and 9 more) wait", exact: true}
	on := func(w wantCondition, v1beta2 bool, generation int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{}}}
		u.SetGeneration(generation)
		if v1beta2 {
			_ = unstructured.SetNestedMap(u.Object, map[string]any{}, "status", "v1beta2")
		}
		w.set(u)
		return u
	}
	newMessage := have
	newMessage.message = "the endpoints of 15 workload clusters (a, b, c and 12 more) wait"
	newReason := have
	newReason.reason, newReason.message = ReasonNameConflict, "the entries of 1 workload cluster (a) wait"
	newStatus := have
	newStatus.status, newStatus.reason = "True", ReasonEndpointEntriesWritten
	for _, tc := range []struct {
		name     string
		u        *unstructured.Unstructured
		want     wantCondition
		now      time.Time
		interval time.Duration
		due      bool
		wait     time.Duration
	}{
		{"a new message 10 s after the last write waits 20 s", on(have, false, 1), newMessage, last.Add(10 * time.Second), interval, false, 20 * time.Second},
		{"a new message an interval after the last write", on(have, false, 1), newMessage, last.Add(interval), interval, true, 0},
		{"a new reason at once", on(have, false, 1), newReason, last.Add(time.Second), interval, true, 0},
		{"a new status at once", on(have, false, 1), newStatus, last.Add(time.Second), interval, true, 0},
		{"no condition yet: at once", &unstructured.Unstructured{Object: map[string]any{}}, have, last.Add(time.Second), interval, true, 0},
		{"interval 0: a new message at once", on(have, false, 1), newMessage, last.Add(time.Second), 0, true, 0},
		{"v1beta2 form of the same generation: a new message waits", on(have, true, 2), newMessage, last.Add(time.Second), interval, false, interval - time.Second},
		{"v1beta2 form of an older generation: at once", func() *unstructured.Unstructured { u := on(have, true, 2); u.SetGeneration(3); return u }(), newMessage, last.Add(time.Second), interval, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, wait := conditionDue(tc.u, tc.want, last, tc.now, tc.interval)
			if due != tc.due || wait != tc.wait {
				t.Errorf("conditionDue = %v, %s; want %v, %s", due, wait, tc.due, tc.wait)
			}
		})
	}
}

// TestServicesSay: of a WC's GSPrivateLinksReady, the MC pass counts a
// refusal for room and a wait for a further ingress service, and nothing
// else: not the waits of the MC-service check (the service not in Azure,
// not visible to the WC's subscription), whose reasons must stay apart
// from the room's, nor a True condition.
func TestServicesSay(t *testing.T) {
	for _, tc := range []struct {
		status, reason, want string
	}{
		{"Unknown", ReasonServiceLimit, ReasonServiceLimit},
		{"Unknown", ReasonIngressServiceWaiting, ReasonIngressServiceWaiting},
		{"Unknown", ReasonMCServiceNotVisible, ""},
		{"Unknown", ReasonMCServiceNotInAzure, ""},
		{"Unknown", ReasonEndpointProvisioning, ""},
		{"Unknown", ReasonEndpointPending, ""},
		{"True", ReasonServiceLimit, ""},
		{"", "", ""},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if tc.status != "" {
			u.Object["status"] = map[string]any{"conditions": []any{map[string]any{
				"type": ConditionGSPrivateLinksReady, "status": tc.status, "reason": tc.reason,
			}}}
		}
		if got := servicesSay(u); got != tc.want {
			t.Errorf("%s %s: servicesSay = %q, want %q", tc.status, tc.reason, got, tc.want)
		}
	}
}
