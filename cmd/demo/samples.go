package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Sample files the demo applies, in order; workload clusters are every
// workload-cluster-*.yaml.
const (
	identityFile = "azureclusteridentity.yaml"
	mcFile       = "management-cluster.yaml"
	wcGlob       = "workload-cluster-*.yaml"
)

// samples are the objects the demo applies, read from config/samples.
type samples struct {
	identity []*unstructured.Unstructured // the Secret and the AzureClusterIdentity
	mc       *unstructured.Unstructured
	wcs      []*unstructured.Unstructured
	// principal is the identity's service principal, registered in azuresim
	// so that the sample's secret works against its token endpoint.
	principal azuresim.Principal
	// identityName and identityNamespace name the AzureClusterIdentity.
	identityName, identityNamespace string
}

func loadSamples(dir string) (*samples, error) {
	s := &samples{}
	var err error
	if s.identity, err = readObjects(filepath.Join(dir, identityFile)); err != nil {
		return nil, err
	}
	if s.principal, err = principalOf(s.identity); err != nil {
		return nil, fmt.Errorf("%s: %w", identityFile, err)
	}
	for _, o := range s.identity {
		if o.GetKind() == "AzureClusterIdentity" {
			s.identityName, s.identityNamespace = o.GetName(), o.GetNamespace()
		}
	}
	mcs, err := readObjects(filepath.Join(dir, mcFile))
	if err != nil {
		return nil, err
	}
	if len(mcs) != 1 || mcs[0].GroupVersionKind() != capz.AzureClusterGVK {
		return nil, fmt.Errorf("%s: want exactly one AzureCluster", mcFile)
	}
	s.mc = mcs[0]
	files, err := filepath.Glob(filepath.Join(dir, wcGlob))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GroupVersionKind() != capz.AzureClusterGVK {
				return nil, fmt.Errorf("%s: %s is not an AzureCluster", f, o.GetKind())
			}
			s.wcs = append(s.wcs, o)
		}
	}
	slices.SortFunc(s.wcs, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	if len(s.wcs) == 0 {
		return nil, fmt.Errorf("no workload clusters (%s) in %s", wcGlob, dir)
	}
	return s, nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// principalOf reads the service principal out of the sample identity and
// its Secret.
func principalOf(objs []*unstructured.Unstructured) (azuresim.Principal, error) {
	var p azuresim.Principal
	var secretName string
	secrets := map[string]string{}
	for _, o := range objs {
		switch o.GetKind() {
		case "AzureClusterIdentity":
			p.TenantID, _, _ = unstructured.NestedString(o.Object, "spec", "tenantID")
			p.ClientID, _, _ = unstructured.NestedString(o.Object, "spec", "clientID")
			secretName, _, _ = unstructured.NestedString(o.Object, "spec", "clientSecret", "name")
		case "Secret":
			v, _, _ := unstructured.NestedString(o.Object, "stringData", "clientSecret")
			secrets[o.GetName()] = v
		}
	}
	p.ClientSecret = secrets[secretName]
	if p.TenantID == "" || p.ClientID == "" || p.ClientSecret == "" {
		return p, errors.New("want an AzureClusterIdentity with tenantID and clientID, and its Secret with stringData.clientSecret")
	}
	return p, nil
}

// wcSubscriptions are the subscriptions the MC's ingress auto-approves, as
// a management cluster's installation configures it for its clusters.
func (s *samples) wcSubscriptions() []string {
	var subs []string
	for _, wc := range s.wcs {
		sub, _, _ := unstructured.NestedString(wc.Object, "spec", "subscriptionID")
		if !slices.Contains(subs, sub) {
			subs = append(subs, sub)
		}
	}
	return subs
}

// apply creates the samples' namespaces and objects, as `kubectl apply -f`
// would on an empty cluster.
func (d *demo) apply(ctx context.Context) error {
	all := append(append(append([]*unstructured.Unstructured{}, d.samples.identity...), d.samples.mc), d.samples.wcs...)
	for _, o := range all {
		if ns := o.GetNamespace(); ns != "" {
			if err := d.sb.EnsureNamespace(ctx, ns); err != nil {
				return err
			}
		}
		if err := d.sb.Client.Create(ctx, o.DeepCopy()); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		d.say("Applied %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
	}
	return nil
}
