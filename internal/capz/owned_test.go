package capz_test

import (
	"fmt"
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func TestOwnedEqual(t *testing.T) {
	conn := func(name, pls string) capz.PrivateLinkServiceConnection {
		return capz.PrivateLinkServiceConnection{Name: name, PrivateLinkServiceID: pls}
	}
	ep := func(name string, conns ...capz.PrivateLinkServiceConnection) capz.PrivateEndpoint {
		return capz.PrivateEndpoint{Name: name, Location: "westeurope", Connections: conns}
	}
	a := ep("a", conn("a-c", "/pls/1"))
	b := ep("b", conn("b-c", "/pls/2"))
	base := capz.Owned{
		Endpoints:   map[string][]capz.PrivateEndpoint{"nodes": {a, b}},
		Finalizers:  []string{"f1", "f2"},
		Annotations: map[string]string{"k": "v"},
	}
	with := func(change func(*capz.Owned)) capz.Owned {
		o := capz.Owned{Endpoints: map[string][]capz.PrivateEndpoint{}, Annotations: map[string]string{}}
		for k, v := range base.Endpoints {
			o.Endpoints[k] = append([]capz.PrivateEndpoint(nil), v...)
		}
		o.Finalizers = append(o.Finalizers, base.Finalizers...)
		for k, v := range base.Annotations {
			o.Annotations[k] = v
		}
		change(&o)
		return o
	}
	for _, tc := range []struct {
		name  string
		other capz.Owned
		equal bool
	}{
		{"same", with(func(*capz.Owned) {}), true},
		{"endpoints in another order", with(func(o *capz.Owned) { o.Endpoints["nodes"] = []capz.PrivateEndpoint{b, a} }), true},
		{"finalizers in another order", with(func(o *capz.Owned) { o.Finalizers = []string{"f2", "f1"} }), true},
		{"an empty subnet list is none", with(func(o *capz.Owned) { o.Endpoints["cp"] = []capz.PrivateEndpoint{} }), true},
		{"one endpoint fewer", with(func(o *capz.Owned) { o.Endpoints["nodes"] = []capz.PrivateEndpoint{a} }), false},
		{"the endpoint in another subnet", with(func(o *capz.Owned) {
			o.Endpoints = map[string][]capz.PrivateEndpoint{"nodes": {a}, "cp": {b}}
		}), false},
		{"another location", with(func(o *capz.Owned) {
			o.Endpoints["nodes"] = []capz.PrivateEndpoint{a, {Name: "b", Location: "northeurope", Connections: b.Connections}}
		}), false},
		{"manual approval", with(func(o *capz.Owned) {
			m := b
			m.ManualApproval = true
			o.Endpoints["nodes"] = []capz.PrivateEndpoint{a, m}
		}), false},
		{"another target", with(func(o *capz.Owned) { o.Endpoints["nodes"] = []capz.PrivateEndpoint{a, ep("b", conn("b-c", "/pls/3"))} }), false},
		{"another request message", with(func(o *capz.Owned) {
			c := conn("b-c", "/pls/2")
			c.RequestMessage = "please"
			o.Endpoints["nodes"] = []capz.PrivateEndpoint{a, ep("b", c)}
		}), false},
		{"a connection more", with(func(o *capz.Owned) {
			o.Endpoints["nodes"] = []capz.PrivateEndpoint{a, ep("b", conn("b-c", "/pls/2"), conn("b-d", "/pls/2"))}
		}), false},
		{"a name twice instead of two names", with(func(o *capz.Owned) { o.Endpoints["nodes"] = []capz.PrivateEndpoint{a, a} }), false},
		{"a finalizer fewer", with(func(o *capz.Owned) { o.Finalizers = []string{"f1"} }), false},
		{"a finalizer twice", with(func(o *capz.Owned) { o.Finalizers = []string{"f1", "f1"} }), false},
		{"another annotation value", with(func(o *capz.Owned) { o.Annotations["k"] = "w" }), false},
		{"an annotation more", with(func(o *capz.Owned) { o.Annotations["l"] = "v" }), false},
		{"no annotations", with(func(o *capz.Owned) { o.Annotations = nil }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := base.Equal(tc.other); got != tc.equal {
				t.Errorf("base.Equal(other) = %v, want %v", got, tc.equal)
			}
			if got := tc.other.Equal(base); got != tc.equal {
				t.Errorf("other.Equal(base) = %v, want %v (Equal must be symmetric)", got, tc.equal)
			}
		})
	}
	var none capz.Owned
	if !none.Equal(capz.Owned{Endpoints: map[string][]capz.PrivateEndpoint{"nodes": nil}, Annotations: map[string]string{}, Finalizers: []string{}}) {
		t.Error("an Owned with empty lists and maps must equal the zero Owned")
	}
}

// BenchmarkOwnedEqual compares the Owned of an MC with 1,000 workload
// clusters' endpoints, as every MC pass does.
func BenchmarkOwnedEqual(b *testing.B) {
	mk := func(reverse bool) capz.Owned {
		eps := make([]capz.PrivateEndpoint, 1000)
		for i := range eps {
			j := i
			if reverse {
				j = len(eps) - 1 - i
			}
			eps[i] = capz.PrivateEndpoint{Name: fmt.Sprintf("wc%04d-api-privatelink-privateendpoint", j), Location: "westeurope",
				Connections: []capz.PrivateLinkServiceConnection{{Name: fmt.Sprintf("wc%04d-api-privatelink-connection", j), PrivateLinkServiceID: fmt.Sprintf("/subscriptions/s/resourceGroups/wc%04d/providers/Microsoft.Network/privateLinkServices/wc%04d-api-privatelink", j, j)}}}
		}
		return capz.Owned{Endpoints: map[string][]capz.PrivateEndpoint{"mc-nodes": eps}, Finalizers: []string{"f"}}
	}
	for _, tc := range []struct {
		name string
		a, b capz.Owned
	}{{"same-order", mk(false), mk(false)}, {"other-order", mk(false), mk(true)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !tc.a.Equal(tc.b) {
					b.Fatal("not equal")
				}
			}
		})
	}
}
