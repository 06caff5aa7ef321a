package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Pinned versions of the modules whose CRDs the tests install: the one
// place they are named (ASO's is pinned in hack/asocrds/go.mod too, and
// TestASOVersionIsPinned keeps the two equal). CAPZ's and Cluster API's
// CRDs are read from the module zips that `go mod download` fetches
// through the module proxy into the module cache (outside the clone),
// nothing compiled; ASO's are generated from its Go types (ASOCRDs).
const (
	CAPZModule = "sigs.k8s.io/cluster-api-provider-azure"
	// CAPZVersion is upstream CAPZ before native private links (SchemaUpstream,
	// and the base of SchemaFork's overlay).
	CAPZVersion = "v1.23.0"
	// CAPZPrivateLinksVersion is upstream CAPZ with apiServerLB.privateLinks
	// (SchemaV127).
	CAPZPrivateLinksVersion = "v1.27.0"
	CAPIModule              = "sigs.k8s.io/cluster-api"
	CAPIVersion             = "v1.12.4" // the version CAPZ v1.23.0 requires
	// ASOVersion is the Azure Service Operator release whose Go types its
	// CRDs are generated from (hack/asocrds pins it; CAPZ v1.27 pins
	// v2.19.0, which the module proxy refuses).
	ASOVersion    = "v2.20.0"
	crdBasesDir   = "config/crd/bases"
	downloadLimit = 5 * time.Minute
)

// asoGenerateLimit bounds generating ASO's CRDs on a cold machine.
const asoGenerateLimit = 10 * time.Minute

// capzCRDFiles are the CAPZ CRDs the operator reads or writes.
var capzCRDFiles = []string{
	"infrastructure.cluster.x-k8s.io_azureclusters.yaml",
	"infrastructure.cluster.x-k8s.io_azureclusteridentities.yaml",
	// Read for the identity of managed clusters (Crossplane ProviderConfigs).
	"infrastructure.cluster.x-k8s.io_azuremanagedcontrolplanes.yaml",
	"infrastructure.cluster.x-k8s.io_azureasomanagedcontrolplanes.yaml",
}

// capiCRDFiles are the Cluster API CRDs the operator reads (and, for the
// control plane gate, patches); a path with a directory is relative to the
// module, not to config/crd/bases.
var capiCRDFiles = []string{
	"cluster.x-k8s.io_clusters.yaml",
	"controlplane/kubeadm/config/crd/bases/controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml",
}

// Schema selects the AzureCluster schema installed in the test API server.
type Schema string

const (
	// SchemaUpstream is CAPZ's AzureCluster exactly as published: no
	// apiServerLB.privateLinks field.
	SchemaUpstream Schema = "upstream"
	// SchemaFork adds apiServerLB.privateLinks with the NAT list spelled
	// natIpConfigurations, as in the CAPZ fork that installations run today.
	SchemaFork Schema = "fork"
	// SchemaV127 is CAPZ v1.27.0's AzureCluster exactly as published: native
	// apiServerLB.privateLinks with the NAT list spelled natIPConfigurations.
	SchemaV127 Schema = "v1.27"
)

// Schemas are every AzureCluster schema the test world knows.
var Schemas = []Schema{SchemaFork, SchemaUpstream, SchemaV127}

// NATConfigurationsField returns the field name under which the schema keeps
// a private link's NAT IP configurations, or "" for SchemaUpstream.
func (s Schema) NATConfigurationsField() string {
	switch s {
	case SchemaFork:
		return "natIpConfigurations"
	case SchemaV127:
		return "natIPConfigurations"
	default:
		return ""
	}
}

// CAPZVersion returns the CAPZ release whose CRDs the schema installs.
func (s Schema) CAPZVersion() string {
	if s == SchemaV127 {
		return CAPZPrivateLinksVersion
	}
	return CAPZVersion
}

// CRDs returns the CRDs a test API server needs for the given AzureCluster
// schema: CAPZ's AzureCluster (with the overlay the schema asks for) and
// AzureClusterIdentity, Cluster API's Cluster and KubeadmControlPlane, and
// ASO's PrivateEndpoint and PrivateLinkService (ASOCRDs).
func CRDs(ctx context.Context, s Schema) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := capzAndCAPICRDs(ctx, s)
	if err != nil {
		return nil, err
	}
	aso, err := ASOCRDs(ctx)
	if err != nil {
		return nil, err
	}
	return append(crds, aso...), nil
}

var (
	asoCRDsMu  sync.Mutex
	asoCRDsDir string
)

// ASOCRDs returns Azure Service Operator's network.azure.com PrivateEndpoint
// and PrivateLinkService CRDs as ASO serves them: generated from ASO's Go
// types (ASOVersion) by hack/asocrds/generate.sh, which caches them outside
// the clone (make test prepares them; a test run alone generates them the
// first time, in about a minute).
func ASOCRDs(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := asoCRDDir(ctx)
	if err != nil {
		return nil, err
	}
	out, err := readCRDGlob(filepath.Join(dir, "network.azure.com_*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(out) != 2 {
		return nil, fmt.Errorf("%s holds %d ASO CRDs, want PrivateEndpoint and PrivateLinkService", dir, len(out))
	}
	return out, nil
}

// asoCRDDir runs hack/asocrds/generate.sh once per process.
func asoCRDDir(ctx context.Context) (string, error) {
	asoCRDsMu.Lock()
	defer asoCRDsMu.Unlock()
	if asoCRDsDir != "" {
		return asoCRDsDir, nil
	}
	dir, err := runHackScript(ctx, asoGenerateLimit, "generating ASO's CRDs", "hack/asocrds/generate.sh")
	if err != nil {
		return "", err
	}
	asoCRDsDir = dir
	return dir, nil
}

var (
	hackBinariesMu sync.Mutex
	hackBinaries   = map[string]string{}
)

// hackBinary returns the path of a hack/ module's binary, building it
// with hack/build-cached.sh (args: NAME [MODFILE]) the first time in this
// process; the script's own cache outside the clone makes later processes
// find it at once.
func hackBinary(ctx context.Context, limit time.Duration, what string, args ...string) (string, error) {
	hackBinariesMu.Lock()
	defer hackBinariesMu.Unlock()
	key := strings.Join(args, " ")
	if p, ok := hackBinaries[key]; ok {
		return p, nil
	}
	p, err := runHackScript(ctx, limit, what, "hack/build-cached.sh", args...)
	if err != nil {
		return "", err
	}
	hackBinaries[key] = p
	return p, nil
}

// runHackScript runs one of the repository's scripts (a path relative to
// its root) within limit and returns the last thing it prints: the path of
// what it built or generated. what names the work in errors.
func runHackScript(ctx context.Context, limit time.Duration, what, script string, args ...string) (string, error) {
	root := repoRoot()
	path := filepath.Join(root, filepath.FromSlash(script))
	if root == "" || !fileExists(path) {
		return "", fmt.Errorf("%s needs %s: run from the repository", what, script)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{path}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s (%s): %w: %s", what, script, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

func capzAndCAPICRDs(ctx context.Context, s Schema) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	capzDir, err := moduleDir(ctx, CAPZModule, s.CAPZVersion())
	if err != nil {
		return nil, err
	}
	capiDir, err := moduleDir(ctx, CAPIModule, CAPIVersion)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, src := range []struct {
		dir   string
		files []string
	}{{capzDir, capzCRDFiles}, {capiDir, capiCRDFiles}} {
		for _, f := range src.files {
			path := filepath.Join(src.dir, crdBasesDir, f)
			if strings.Contains(f, "/") {
				path = filepath.Join(src.dir, f)
			}
			loaded, err := readCRDs(path)
			if err != nil {
				return nil, err
			}
			crds = append(crds, loaded...)
		}
	}
	if s != SchemaFork {
		return crds, nil // CAPZ as published
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind == "AzureCluster" {
			if err := addPrivateLinks(crd, s.NATConfigurationsField()); err != nil {
				return nil, err
			}
		}
	}
	return crds, nil
}

// readCRDGlob decodes every CustomResourceDefinition in the YAML files a
// pattern matches.
func readCRDGlob(pattern string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crds, err := readCRDs(f)
		if err != nil {
			return nil, err
		}
		out = append(out, crds...)
	}
	return out, nil
}

// readCRDs decodes every CustomResourceDefinition in a YAML file.
func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading CRD file: %w", err)
	}
	decodedMu.Lock()
	defer decodedMu.Unlock()
	d, ok := decoded[path]
	if !ok || !bytes.Equal(d.raw, raw) {
		crds, err := decodeCRDs(path, raw)
		if err != nil {
			return nil, err
		}
		d = decodedFile{raw: raw, crds: crds}
		decoded[path] = d
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(d.crds))
	for i, c := range d.crds {
		out[i] = c.DeepCopy()
	}
	return out, nil
}

// decoded keeps each CRD file's decoded CRDs for the next API server the
// test process starts: CAPZ's and ASO's CRDs are megabytes of YAML, and
// decoding them again cost about 2 CPU-seconds per start under -race.
// Callers get copies (envtest edits the CRDs it installs).
var (
	decodedMu sync.Mutex
	decoded   = map[string]decodedFile{}
)

type decodedFile struct {
	raw  []byte
	crds []*apiextensionsv1.CustomResourceDefinition
}

// decodeCRDs decodes every CustomResourceDefinition in YAML read from path.
func decodeCRDs(path string, raw []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	docs, err := yamlDocs(path, raw)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range docs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		out = append(out, crd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no CustomResourceDefinition", path)
	}
	return out, nil
}

// yamlDocs splits YAML read from path into its non-empty documents.
func yamlDocs(path string, raw []byte) ([][]byte, error) {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// addPrivateLinks adds the fork-compatible apiServerLB.privateLinks field to
// every version of the AzureCluster CRD. natField is the spelling of the NAT
// IP configuration list.
func addPrivateLinks(crd *apiextensionsv1.CustomResourceDefinition, natField string) error {
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("AzureCluster %s has no schema", v.Name)
		}
		lb, err := schemaAt(v.Schema.OpenAPIV3Schema, "spec", "networkSpec", "apiServerLB")
		if err != nil {
			return fmt.Errorf("AzureCluster %s: %w", v.Name, err)
		}
		lb.Properties["privateLinks"] = privateLinksSchema(natField)
	}
	return nil
}

// schemaAt walks nested object properties. A missing step is an error, so a
// CAPZ schema change fails loudly instead of silently skipping the overlay.
// The returned value is a copy, but its Properties map is shared with the
// tree, so adding a property through it changes the CRD.
func schemaAt(s *apiextensionsv1.JSONSchemaProps, path ...string) (apiextensionsv1.JSONSchemaProps, error) {
	cur := *s
	for i, p := range path {
		next, ok := cur.Properties[p]
		if !ok {
			return cur, fmt.Errorf("schema has no property %v", path[:i+1])
		}
		cur = next
	}
	if cur.Properties == nil {
		return cur, fmt.Errorf("schema property %v is not an object with properties", path)
	}
	return cur, nil
}

func privateLinksSchema(natField string) apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	strList := apiextensionsv1.JSONSchemaProps{
		Type:  "array",
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str},
	}
	nat := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"allocationMethod": {
				Type: "string",
				Enum: []apiextensionsv1.JSON{{Raw: []byte(`"Static"`)}, {Raw: []byte(`"Dynamic"`)}},
			},
			"subnet":           str,
			"privateIPAddress": str,
		},
	}
	link := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"name"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"name":                      str,
			"lbFrontendIPConfigNames":   strList,
			"allowedSubscriptions":      strList,
			"autoApprovedSubscriptions": strList,
			"enableProxyProtocol":       {Type: "boolean"},
			natField: {
				Type:  "array",
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &nat},
			},
		},
	}
	return apiextensionsv1.JSONSchemaProps{
		Type:         "array",
		Items:        &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &link},
		XListType:    new("map"),
		XListMapKeys: []string{"name"},
	}
}

var (
	moduleDirsMu sync.Mutex
	moduleDirs   = map[string]string{}
)

// moduleDir returns the directory of a module version in the module cache,
// downloading it through the module proxy if needed.
func moduleDir(ctx context.Context, module, version string) (string, error) {
	key := module + "@" + version
	moduleDirsMu.Lock()
	defer moduleDirsMu.Unlock()
	if dir, ok := moduleDirs[key]; ok {
		return dir, nil
	}
	ctx, cancel := context.WithTimeout(ctx, downloadLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBinary(), "mod", "download", "-json", key)
	// Outside any module, so the download never touches a go.mod or go.sum.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s%s", key, err, stderr.String(), stdout.String())
	}
	var info struct {
		Dir   string
		Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return "", fmt.Errorf("go mod download %s: decoding output: %w", key, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", key, info.Error)
	}
	moduleDirs[key] = info.Dir
	return info.Dir, nil
}

// goBinary is the go command on PATH; go test puts the go command that runs
// the tests first on PATH.
func goBinary() string {
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
