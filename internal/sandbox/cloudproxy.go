package sandbox

import (
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Well-known clouds' hosts (azcore's cloud package and arm/runtime): the
// operator derives them from spec.azureEnvironment, without a custom
// cloud.
var (
	ChinaCloudHosts        = []string{"management.chinacloudapi.cn", "login.chinacloudapi.cn"}
	USGovernmentCloudHosts = []string{"management.usgovcloudapi.net", "login.microsoftonline.us"}
	// PublicCloudHosts are Azure's public cloud's (the real CAPZ knows no other
	// way to the emulator: Options.RealControllers).
	PublicCloudHosts = []string{"management.azure.com", "login.microsoftonline.com"}
)

// CloudProxy is an HTTPS proxy (CONNECT only) that sends a connection to
// any of its hosts to the emulator, and refuses every other: a process
// that knows only Azure's well-known clouds reaches azuresim as
// management.chinacloudapi.cn through it (HTTPS_PROXY), and trusts it
// through the emulator's CA (SSL_CERT_FILE), the emulator's certificate
// naming those hosts (Options.CloudHosts). Go never proxies loopback
// addresses, so the API server is reached directly.
type CloudProxy struct {
	// URL is the proxy's address, for HTTPS_PROXY.
	URL string

	target  string
	hosts   []string
	srv     *http.Server
	mu      sync.Mutex
	refused []string
	conns   map[net.Conn]bool
}

// StartCloudProxy starts a proxy to target ("127.0.0.1:port") for hosts.
func StartCloudProxy(target string, hosts []string) (*CloudProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CloudProxy{URL: "http://" + ln.Addr().String(), target: target, hosts: hosts, conns: map[net.Conn]bool{}}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.connect), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *CloudProxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if r.Method != http.MethodConnect || err != nil || port != "443" || !slices.Contains(p.hosts, strings.ToLower(host)) {
		p.mu.Lock()
		p.refused = append(p.refused, r.Method+" "+r.Host)
		p.mu.Unlock()
		http.Error(w, "the test world's cloud proxy serves CONNECT to "+strings.Join(p.hosts, ", ")+" only", http.StatusForbidden)
		return
	}
	upstream, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		http.Error(w, "cannot hijack", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[upstream] = true, true
	p.mu.Unlock()
	go func() {
		// What the client sent after CONNECT is in buf first.
		_, _ = io.Copy(upstream, io.MultiReader(buf.Reader, client))
		_ = upstream.Close()
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		_ = client.Close()
		p.mu.Lock()
		delete(p.conns, client)
		delete(p.conns, upstream)
		p.mu.Unlock()
	}()
}

// Refused lists the requests the proxy refused ("METHOD host:port").
func (p *CloudProxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.refused)
}

// Close stops the proxy and its tunnels.
func (p *CloudProxy) Close() error {
	err := p.srv.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
	return err
}
