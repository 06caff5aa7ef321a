package eventrec

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// WritesFailed counts the Event writes the API server refused or that did
// not reach it. Recorder (sink.go settle) drops an Event the API server
// refuses (a 4xx other than 429) and retries one it did not take (a
// network error, a 429, a 5xx) up to 12 times, 10 s apart, before it drops
// it, logging either. The count is of attempts: a rejected one is an Event
// lost, a retried one is lost only if all 12 are.
var WritesFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "azure_private_endpoint_operator_event_writes_failed_total",
	Help: "Event writes to the API server that failed: result=rejected (a 4xx: the Event is dropped), result=retried (a 429, a 5xx or a network error: the operator tries again, up to 12 times).",
}, []string{"result"})

func init() { metrics.Registry.MustRegister(WritesFailed) }

// CountWrites makes every client built from cfg count its failed Event
// writes (WritesFailed); other requests pass untouched.
func CountWrites(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return writeCounter{next: rt} })
}

type writeCounter struct{ next http.RoundTripper }

func (w writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if req.Method == http.MethodGet || !isEventPath(req.URL.Path) {
		return resp, err
	}
	switch {
	case err != nil || resp.StatusCode >= 500:
		WritesFailed.WithLabelValues("retried").Inc()
	case resp.StatusCode >= 400:
		WritesFailed.WithLabelValues("rejected").Inc()
	}
	return resp, err
}

// isEventPath: the events of either API (events.k8s.io, which Recorder
// writes, and core v1, which controller-runtime's leader election writes).
func isEventPath(p string) bool {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	return len(segs) > 1 && segs[0] == "apis" && segs[1] == "events.k8s.io" ||
		len(segs) > 4 && segs[0] == "api" && segs[1] == "v1" && segs[2] == "namespaces" && segs[4] == "events"
}
