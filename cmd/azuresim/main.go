// Command azuresim runs the Azure Resource Manager emulator for networking
// and Private DNS on this machine, so the operator (or anything using the
// Azure SDK) can be tried without an Azure subscription. See the package
// documentation of internal/azuresim for what is modelled.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, signals()))
}

func signals() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	return ch
}

// principalFlag collects --principal TENANT/CLIENT_ID:SECRET values.
type principalFlag []azuresim.Principal

func (p *principalFlag) String() string { return fmt.Sprint(len(*p)) }

func (p *principalFlag) Set(v string) error {
	tenantClient, secret, ok := strings.Cut(v, ":")
	tenant, client, ok2 := strings.Cut(tenantClient, "/")
	if !ok || !ok2 || tenant == "" || client == "" || secret == "" {
		return errors.New("want TENANT_ID/CLIENT_ID:SECRET")
	}
	*p = append(*p, azuresim.Principal{TenantID: tenant, ClientID: client, ClientSecret: secret})
	return nil
}

func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	fs := flag.NewFlagSet("azuresim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("address", "127.0.0.1:8443", "Address to listen on; loopback only unless you know why.")
	useTLS := fs.Bool("tls", true, "Serve HTTPS with a self-signed certificate (the Azure identity library requires HTTPS for its token endpoint).")
	caFile := fs.String("ca-file", filepath.Join(os.TempDir(), "azuresim-ca.pem"), "Where to write the CA certificate clients must trust (with --tls).")
	latency := fs.Duration("latency", 0, "How long long-running operations take; Azure takes 10-60s for a private endpoint.")
	pageSize := fs.Int("page-size", 100, "Items per page of list operations.")
	throttling := fs.Bool("throttling", false, "Enforce ARM's per-subscription request limits (reads 250/25 per s, writes and deletes 200/10 per s) and the resource providers' windows per subscription (Private DNS reads 500, Network writes 1,000, Network reads 10,000 per 5 minutes).")
	noAuth := fs.Bool("no-auth", false, "Serve ARM requests without a bearer token (handy with curl).")
	seedFile := fs.String("seed", "", "JSON file of resource groups and resources to create at start (see the Seed type).")
	var principals principalFlag
	fs.Var(&principals, "principal", "Service principal TENANT_ID/CLIENT_ID:SECRET the token endpoint accepts (repeatable). Without any, every client gets a token.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(stderr, "azuresim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *pageSize < 1 || *latency < 0 {
		_, _ = fmt.Fprintln(stderr, "azuresim: --page-size must be at least 1 and --latency not negative")
		return 2
	}
	opts := azuresim.Options{Latency: *latency, PageSize: *pageSize, TLS: *useTLS, NoAuth: *noAuth, Principals: principals}
	if *throttling {
		opts.Throttling = azuresim.DefaultThrottling()
	}
	srv := azuresim.New(opts)
	if *seedFile != "" {
		if err := seed(srv, *seedFile); err != nil {
			_, _ = fmt.Fprintf(stderr, "azuresim: %v\n", err)
			return 1
		}
	}
	if err := srv.Start(*addr); err != nil {
		_, _ = fmt.Fprintf(stderr, "azuresim: %v\n", err)
		return 1
	}
	curl := "curl"
	if *useTLS {
		if err := srv.WriteCAFile(*caFile); err != nil {
			_, _ = fmt.Fprintf(stderr, "azuresim: writing the CA certificate: %v\n", err)
			_ = srv.Close()
			return 1
		}
		curl = "curl --cacert " + *caFile
	}
	_, _ = fmt.Fprintf(stdout, "azuresim listening on %s\n", srv.URL())
	_, _ = fmt.Fprintf(stdout, "  ARM endpoint:    %s\n", srv.URL())
	_, _ = fmt.Fprintf(stdout, "  AAD authority:   %s/ (token endpoint %s/<tenant>/oauth2/v2.0/token)\n", srv.URL(), srv.URL())
	if *useTLS {
		_, _ = fmt.Fprintf(stdout, "  CA certificate:  %s\n", *caFile)
	}
	_, _ = fmt.Fprintf(stdout, "  admin API:       %s/_sim/  (try: %s %s/_sim/resources)\n", srv.URL(), curl, srv.URL())
	<-stop
	_, _ = fmt.Fprintln(stdout, "azuresim: shutting down")
	ctxErr := srv.Close()
	if ctxErr != nil {
		_, _ = fmt.Fprintf(stderr, "azuresim: shutdown: %v\n", ctxErr)
		return 1
	}
	return 0
}

func seed(srv *azuresim.Server, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading seed file: %w", err)
	}
	var sd azuresim.Seed
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sd); err != nil {
		return fmt.Errorf("seed file %s: %w", path, err)
	}
	if err := srv.Seed(sd); err != nil {
		return fmt.Errorf("seed file %s: %w", path, err)
	}
	return nil
}
