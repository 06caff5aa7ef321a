package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The real-controller test world (internal/sandbox, Options.RealControllers)
// runs Cluster API Provider Azure's and Azure Service Operator's own
// controllers, compiled from their modules by hack/build-cached.sh, and
// serves ASO's CRDs in all their versions (hack/asocrds/generate.sh --real).

// realBuildLimit bounds building one of the real controllers on a cold
// machine (about 4 minutes on 2 cores for CAPZ's).
const realBuildLimit = 20 * time.Minute

// RealASOBinary returns the path of hack/asomanager's binary, building it
// the first time (cached outside the clone).
func RealASOBinary(ctx context.Context) (string, error) {
	return hackBinary(ctx, realBuildLimit, "building asomanager", "asomanager")
}

// RealCAPZBinary returns the path of hack/capzmanager's binary for the
// CAPZ release of a schema (v1.23.0 for SchemaUpstream, v1.27.0 for
// SchemaV127), building it the first time (cached outside the clone).
func RealCAPZBinary(ctx context.Context, s Schema) (string, error) {
	if s == SchemaFork {
		return "", fmt.Errorf("the fork's CAPZ is not a module the test world can build (schema %q)", s)
	}
	modfile, err := capzModFile("capzmanager", s.CAPZVersion())
	if err != nil {
		return "", err
	}
	return hackBinary(ctx, realBuildLimit, "building CAPZ "+s.CAPZVersion()+"'s manager", "capzmanager", modfile)
}

// RealASOCRDs returns the CRDs of every kind CAPZ makes through ASO, with
// all of ASO's versions of it, stored in the newest storage version and
// converted by ASO's webhook at convertURL (trusted through caBundle).
func RealASOCRDs(ctx context.Context, convertURL string, caBundle []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := runHackScript(ctx, asoGenerateLimit, "generating the real ASO's CRDs", "hack/asocrds/generate.sh", "--real")
	if err != nil {
		return nil, err
	}
	out, err := readCRDGlob(filepath.Join(dir, "*.azure.com_*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, crd := range out {
		url := convertURL
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
				ConversionReviewVersions: []string{"v1"},
			},
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no ASO CRD", dir)
	}
	return out, nil
}

// WebhookServing returns the directory holding the certificate (tls.crt,
// tls.key) envtest made for webhook servers on 127.0.0.1, and the CA that
// signed it, for another webhook server of the test world.
func (e *Env) WebhookServing() (certDir string, caPEM []byte) {
	o := e.env.WebhookInstallOptions
	return o.LocalServingCertDir, o.LocalServingCAData
}
