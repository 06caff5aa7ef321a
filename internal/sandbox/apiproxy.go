package sandbox

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// apiProxy is a TCP proxy between the operator binary and kube-apiserver
// (Options.APIProxy). Its outage closes every connection and refuses new
// ones for a while, then accepts again on the same address: what a client
// sees when the API server restarts (watches end, requests fail, then the
// same objects come back, since etcd is kept). TLS passes through untouched.
type apiProxy struct {
	target, addr string

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
}

func startAPIProxy(target string) (*apiProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &apiProxy{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	go p.serve(ln)
	return p, nil
}

func (p *apiProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed: an outage or the end
		}
		go p.pipe(c)
	}
}

func (p *apiProxy) pipe(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
	_ = client.Close()
	_ = server.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// track registers a connection pair, or closes it when the proxy is down.
func (p *apiProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil || p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// outage cuts every connection, refuses new ones for d, and listens again.
func (p *apiProxy) outage(d time.Duration) error {
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	time.Sleep(d)
	var ln net.Listener
	var err error
	for range 50 { // the port may linger a moment after the close
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.Join(ln.Close(), errors.New("api proxy closed"))
	}
	p.ln = ln
	go p.serve(ln)
	return nil
}

func (p *apiProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
	}
	for c := range p.conns {
		_ = c.Close()
	}
}
