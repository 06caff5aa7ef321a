package privateendpoint

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClearAddress: withdrawing takes out exactly what says where the
// endpoint is — the address keys, external-dns' two annotations — and
// keeps names and everything someone else put there.
func TestClearAddress(t *testing.T) {
	data := func() map[string]string {
		return map[string]string{KeyIPAddress: "10.0.0.4", KeyIPAddresses: "10.0.0.4", KeyHosts: "10.0.0.4 a.example.com\n",
			KeyPrivateEndpointID: "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/privateEndpoints/p", KeyFQDNs: "a.example.com", "extra": "mine"}
	}
	kept := map[string]string{KeyFQDNs: "a.example.com", "extra": "mine"}

	cm := &corev1.ConfigMap{Data: data()}
	if !clearAddress(cm) || !cmp.Equal(cm.Data, kept) {
		t.Errorf("ConfigMap: %v", cm.Data)
	}
	if clearAddress(cm) {
		t.Error("ConfigMap: a second withdrawal changed something")
	}

	sec := &corev1.Secret{Data: map[string][]byte{}}
	for k, v := range data() {
		sec.Data[k] = []byte(v)
	}
	if !clearAddress(sec) || len(sec.Data) != 2 || string(sec.Data["extra"]) != "mine" || string(sec.Data[KeyFQDNs]) != "a.example.com" {
		t.Errorf("Secret: %v", sec.Data)
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		ExternalDNSHostname: "api.example.com", ExternalDNSTarget: "10.0.0.4", "team": "a",
	}}}
	if !clearAddress(svc) || !cmp.Equal(svc.Annotations, map[string]string{"team": "a"}) {
		t.Errorf("Service: %v", svc.Annotations)
	}
}
