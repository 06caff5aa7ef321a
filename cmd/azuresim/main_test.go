package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunServesUntilStopped starts the program as a user would, with a seed
// file, reads where it listens from its output, lists the seeded resources
// through the admin API over HTTPS with the CA it wrote, and stops it.
func TestRunServesUntilStopped(t *testing.T) {
	dir := t.TempDir()
	seedFile := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seedFile, []byte(`{"resourceGroups":[{"subscriptionID":"s1","name":"rg","location":"westeurope"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	outR, outW := io.Pipe()
	stop := make(chan os.Signal, 1)
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--address=127.0.0.1:0", "--ca-file=" + caFile, "--seed=" + seedFile, "--latency=2s"}, outW, io.Discard, stop)
		_ = outW.Close()
	}()

	lines := bufio.NewScanner(outR)
	var url string
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "azuresim listening on "); ok {
			url = u
			break
		}
	}
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("did not print its address; got %q", url)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()

	waitForFile(t, caFile)
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("CA file holds no certificate")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Get(url + "/_sim/resources")
	if err != nil {
		t.Fatal(err)
	}
	var infos []struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&infos)
	_ = resp.Body.Close()
	if err != nil || len(infos) != 1 || infos[0].ID != "/subscriptions/s1/resourceGroups/rg" {
		t.Errorf("seeded resources: %v %v", infos, err)
	}

	stop <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after SIGTERM: want 0, got %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop after SIGTERM")
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--page-size=0"},
		{"--principal=no-secret"},
		{"positional"},
	} {
		if diff := cmp.Diff(2, run(args, io.Discard, io.Discard, nil)); diff != "" {
			t.Errorf("%v: exit code (-want +got):\n%s", args, diff)
		}
	}
	if diff := cmp.Diff(1, run([]string{"--seed=/does/not/exist"}, io.Discard, io.Discard, nil)); diff != "" {
		t.Errorf("a missing seed file: exit code (-want +got):\n%s", diff)
	}
}

// waitForFile waits for the program to write a file, polling a condition
// rather than sleeping a fixed time.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written", path)
		}
		<-tick.C
	}
}
