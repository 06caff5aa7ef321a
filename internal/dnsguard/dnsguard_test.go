package dnsguard

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	g := New([]string{"Example.ORG.", " "})
	for _, tc := range []struct {
		reason string
		zone   string
		refuse bool
	}{
		{"a WC named management with base domain azure.com: ARM's own name", "management.azure.com", true},
		{"login + microsoftonline.com: Entra ID sign-in", "login.microsoftonline.com", true},
		{"a parent of ARM's name", "azure.com", true},
		{"case and a trailing dot do not hide it", "Management.Azure.COM.", true},
		{"under a storage domain", "blob.core.windows.net", true},
		{"a private endpoint zone", "privatelink.blob.core.windows.net", true},
		{"a private endpoint zone of any service", "privatelink.example.io", true},
		{"the configured deny list, exactly", "example.org", true},
		{"under the configured deny list", "wc1.example.org", true},
		{"above the configured deny list", "org", true},
		{"US Government ARM", "management.usgovcloudapi.net", true},
		{"China ARM", "management.chinacloudapi.cn", true},
		{"empty", "", true},
		{"a cluster's own zone", "wc1.k8s.example.com", false},
		{"a name that only ends like a protected one", "notazure.com", false},
		{"privatelink as a later label", "wc1.privatelink-gw.example.com", false},
	} {
		err := g.Check(tc.zone)
		if (err != nil) != tc.refuse {
			t.Errorf("%s: Check(%q) = %v, want refused %v", tc.reason, tc.zone, err, tc.refuse)
		}
	}
	if err := (Guard{}).Check("management.azure.com"); err == nil || !strings.Contains(err.Error(), "azure.com") {
		t.Errorf("the zero Guard checks the built-in domains and names the one shadowed: %v", err)
	}
}

func TestUnder(t *testing.T) {
	allowed := []string{"tenants.example.com", ""}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"tenants.example.com", true},
		{"Team-A.Tenants.Example.com.", true},
		{"example.com", false},
		{"eviltenants.example.com", false},
		{"", false},
	} {
		if got := Under(tc.name, allowed); got != tc.want {
			t.Errorf("Under(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzCheck: whatever the name, Check never panics, and a name it accepts
// neither overlaps a protected domain nor starts with privatelink.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"management.azure.com", "wc1.example.com", "privatelink.x", ".", "a..b", "AZURE.COM."} {
		f.Add(s)
	}
	g := New([]string{"example.org"})
	f.Fuzz(func(t *testing.T, zone string) {
		if g.Check(zone) != nil {
			return
		}
		z := normalize(zone)
		for _, d := range append(append([]string{}, Builtin...), "example.org") {
			if overlaps(z, d) {
				t.Fatalf("accepted %q, which overlaps %s", zone, d)
			}
		}
		if strings.HasPrefix(z, "privatelink.") || z == "privatelink" {
			t.Fatalf("accepted a private endpoint zone %q", zone)
		}
	})
}
