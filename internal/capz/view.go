package capz

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Values of spec.networkSpec.apiServerLB.type.
const (
	LBTypeInternal = "Internal"
	LBTypePublic   = "Public"
)

// Subnet roles CAPZ knows.
const (
	SubnetRoleNode         = "node"
	SubnetRoleControlPlane = "control-plane"
)

// PausedAnnotation pauses reconciliation of a Cluster API object.
const PausedAnnotation = "cluster.x-k8s.io/paused"

// DeleteForMoveAnnotation is set by clusterctl move on each object it
// deletes from the source management cluster after creating it in the
// target (Cluster API v1.14, cmd/clusterctl/api/v1alpha3 annotations.go;
// mover.go deleteSourceObject adds it, deletes the object, then removes
// its finalizers). What such an object stands for lives on elsewhere.
const DeleteForMoveAnnotation = "clusterctl.cluster.x-k8s.io/delete-for-move"

// DeletedForMove reports whether clusterctl move is deleting o from the
// source management cluster: its finalizers must release it without
// touching what it stands for.
func DeletedForMove(o metav1.Object) bool {
	_, ok := o.GetAnnotations()[DeleteForMoveAnnotation]
	return ok && o.GetDeletionTimestamp() != nil
}

// ConditionPrivateLinksReady is the condition the CAPZ fork sets on an
// AzureCluster once its private link services exist.
const ConditionPrivateLinksReady = "PrivateLinksReady"

// AzureCluster is the operator's typed view of an AzureCluster: only what
// the operator reads. It is built from the unstructured object and never
// written back; writes go through server-side apply of the operator's own
// fields.
type AzureCluster struct {
	Name, Namespace  string
	SubscriptionID   string
	ResourceGroup    string
	Location         string
	AzureEnvironment string
	IdentityRef      *ObjectRef
	// APIServerLBType is spec.networkSpec.apiServerLB.type ("" when unset;
	// CAPZ defaults it to Public).
	APIServerLBType string
	// APIServerLBName and APIServerFrontendName are the API server load
	// balancer and its first frontend IP configuration, with CAPZ's defaults
	// for an internal load balancer ("<cluster>-internal-lb",
	// "<lb>-frontEnd") where spec leaves them empty.
	APIServerLBName       string
	APIServerFrontendName string
	// PrivateLinks are the fork's apiServerLB.privateLinks, whichever spelling
	// of the NAT list the schema uses; nil on upstream CAPZ.
	PrivateLinks []PrivateLink
	Subnets      []Subnet
	// PrivateLinksReady is the PrivateLinksReady condition being True.
	PrivateLinksReady bool
	Annotations       map[string]string
	// ClusterName is the owning Cluster API Cluster, from the owner
	// reference or the cluster-name label; "" when unknown.
	ClusterName string
	Deleting    bool
}

// ObjectRef is a reference to another object.
type ObjectRef struct {
	Name, Namespace string
}

// PrivateLink is one private link declared on the API server load balancer.
type PrivateLink struct {
	Name                      string
	LBFrontendIPConfigNames   []string
	AllowedSubscriptions      []string
	AutoApprovedSubscriptions []string
	EnableProxyProtocol       bool
	NATIPConfigurations       []NATIPConfiguration
}

// NATIPConfiguration is a NAT IP configuration of a private link.
type NATIPConfiguration struct {
	AllocationMethod string
	Subnet           string
	PrivateIPAddress string
}

// Subnet is an entry of spec.networkSpec.subnets.
type Subnet struct {
	Name, Role, ID   string
	PrivateEndpoints []PrivateEndpoint
}

// PrivateEndpoint is an entry of a subnet's privateEndpoints.
type PrivateEndpoint struct {
	Name           string
	Location       string
	ManualApproval bool
	Connections    []PrivateLinkServiceConnection
}

// PrivateLinkServiceConnection is a private endpoint's connection.
type PrivateLinkServiceConnection struct {
	Name                 string
	PrivateLinkServiceID string
	RequestMessage       string
}

// natFields are the two spellings of a private link's NAT list.
var natFields = []string{"natIpConfigurations", "natIPConfigurations"}

// FromUnstructured reads the view from an AzureCluster object. Malformed
// fields are reported together, each naming its path, so a user can fix
// them all at once; what could be read is returned alongside.
func FromUnstructured(u *unstructured.Unstructured) (*AzureCluster, field.ErrorList) {
	r := reader{obj: u.Object}
	ac := &AzureCluster{
		Name:             u.GetName(),
		Namespace:        u.GetNamespace(),
		SubscriptionID:   r.str(specPaths.subscriptionID),
		ResourceGroup:    r.str(specPaths.resourceGroup),
		Location:         r.str(specPaths.location),
		AzureEnvironment: r.str(specPaths.azureEnvironment),
		APIServerLBType:  r.str(specPaths.lbType),
		Annotations:      u.GetAnnotations(),
		Deleting:         u.GetDeletionTimestamp() != nil,
		ClusterName:      ownerCluster(u),
	}
	if name := r.str(specPaths.identityName); name != "" {
		ns := r.str(specPaths.identityNamespace)
		if ns == "" {
			ns = ac.Namespace // CAPZ's default: the cluster's namespace.
		}
		ac.IdentityRef = &ObjectRef{Name: name, Namespace: ns}
	}
	for i, m := range r.list(specPaths.privateLinks) {
		ac.PrivateLinks = append(ac.PrivateLinks, r.privateLink(specPaths.privateLinks, i, m))
	}
	for i, m := range r.list(specPaths.subnets) {
		ac.Subnets = append(ac.Subnets, r.subnet(specPaths.subnets, i, m))
	}
	ac.APIServerLBName = r.str(specPaths.lbName)
	if ac.APIServerLBName == "" && ac.APIServerLBType == LBTypeInternal {
		ac.APIServerLBName = ac.Name + "-internal-lb"
	}
	if fes := r.list(specPaths.frontendIPs); len(fes) > 0 {
		ac.APIServerFrontendName, _ = fes[0]["name"].(string)
	}
	if ac.APIServerFrontendName == "" && ac.APIServerLBName != "" {
		ac.APIServerFrontendName = ac.APIServerLBName + "-frontEnd"
	}
	ac.PrivateLinksReady = conditionTrue(r, ConditionPrivateLinksReady)
	return ac, r.errs
}

// GroupAndLinks reads of an AzureCluster only its subscription, resource
// group and declared private links' names, as FromUnstructured reads them
// (a field of the wrong type reads as empty, a link without a name is
// left out): for what decides, per cluster and often, whether a change
// concerns it, where converting the whole object was the cost.
func GroupAndLinks(u *unstructured.Unstructured) (subscription, resourceGroup string, links []string) {
	r := reader{obj: u.Object}
	for _, m := range r.list(specPaths.privateLinks) {
		sub := reader{obj: m}
		if name := sub.str(pathName); name != "" {
			links = append(links, name)
		}
	}
	return r.str(specPaths.subscriptionID), r.str(specPaths.resourceGroup), links
}

// specPaths are the paths FromUnstructured reads, made once: it reads
// every AzureCluster on every pass, and a path made per read was an
// allocation each (test/scale at N = 3,000: with the field paths of
// the lists' items, 1.6 GB of the 20.8 GB the operator allocated until its
// heap's peak).
var specPaths = func() (p struct {
	subscriptionID, resourceGroup, location, azureEnvironment, identityName, identityNamespace path
	lbType, lbName, privateLinks, frontendIPs, subnets                                         path
}) {
	spec := path{"spec"}
	net := spec.child("networkSpec")
	lb := net.child("apiServerLB")
	p.subscriptionID, p.resourceGroup = spec.child("subscriptionID"), spec.child("resourceGroup")
	p.location, p.azureEnvironment = spec.child("location"), spec.child("azureEnvironment")
	p.identityName, p.identityNamespace = spec.child("identityRef", "name"), spec.child("identityRef", "namespace")
	p.lbType, p.lbName = lb.child("type"), lb.child("name")
	p.privateLinks, p.frontendIPs, p.subnets = lb.child("privateLinks"), lb.child("frontendIPs"), net.child("subnets")
	return p
}()

// The paths an item of a list reads, relative to the item.
var (
	pathName, pathRole, pathID, pathLocation          = path{"name"}, path{"role"}, path{"id"}, path{"location"}
	pathPrivateEndpoints, pathConnections             = path{"privateEndpoints"}, path{"privateLinkServiceConnections"}
	pathManualApproval, pathServiceID, pathRequestMsg = path{"manualApproval"}, path{"privateLinkServiceID"}, path{"requestMessage"}
)

// privateLink reads item i of the list at p.
func (r *reader) privateLink(p path, i int, m map[string]any) PrivateLink {
	sub := reader{obj: m}
	pl := PrivateLink{
		Name:                      sub.str(pathName),
		LBFrontendIPConfigNames:   sub.strs(path{"lbFrontendIPConfigNames"}),
		AllowedSubscriptions:      sub.strs(path{"allowedSubscriptions"}),
		AutoApprovedSubscriptions: sub.strs(path{"autoApprovedSubscriptions"}),
		EnableProxyProtocol:       sub.boolean(path{"enableProxyProtocol"}),
	}
	for _, f := range natFields {
		for j, nm := range sub.list(path{f}) {
			n := reader{obj: nm}
			pl.NATIPConfigurations = append(pl.NATIPConfigurations, NATIPConfiguration{
				AllocationMethod: n.str(path{"allocationMethod"}),
				Subnet:           n.str(path{"subnet"}),
				PrivateIPAddress: n.str(path{"privateIPAddress"}),
			})
			if len(n.errs) > 0 {
				r.absorb(p.field().Index(i).Child(f).Index(j), n.errs)
			}
		}
	}
	if pl.Name == "" {
		sub.errs = append(sub.errs, field.Required(field.NewPath("name"), "a private link needs a name"))
	}
	r.absorbItem(p, i, sub.errs)
	return pl
}

// subnet reads item i of the list at p.
func (r *reader) subnet(p path, i int, m map[string]any) Subnet {
	sub := reader{obj: m}
	s := Subnet{
		Name: sub.str(pathName),
		Role: sub.str(pathRole),
		ID:   sub.str(pathID),
	}
	for j, pm := range sub.list(pathPrivateEndpoints) {
		pe := reader{obj: pm}
		ep := PrivateEndpoint{
			Name:           pe.str(pathName),
			Location:       pe.str(pathLocation),
			ManualApproval: pe.boolean(pathManualApproval),
		}
		for k, cm := range pe.list(pathConnections) {
			c := reader{obj: cm}
			ep.Connections = append(ep.Connections, PrivateLinkServiceConnection{
				Name:                 c.str(pathName),
				PrivateLinkServiceID: c.str(pathServiceID),
				RequestMessage:       c.str(pathRequestMsg),
			})
			pe.absorbItem(pathConnections, k, c.errs)
		}
		s.PrivateEndpoints = append(s.PrivateEndpoints, ep)
		sub.absorbItem(pathPrivateEndpoints, j, pe.errs)
	}
	r.absorbItem(p, i, sub.errs)
	return s
}

// conditionLists are where a condition of an AzureCluster may be, in the
// order read: status.conditions (Cluster API's v1beta1 form in CAPZ
// v1.23/v1.27, metav1.Condition once CAPZ serves a v1beta2 contract API),
// status.v1beta2.conditions (the v1beta2 form a v1beta1 API carries during
// the transition, as Cluster API v1.9–v1.12's own v1beta1 types do:
// api/core/v1beta1 ClusterV1Beta2Status), and
// status.deprecated.v1beta1.conditions (where a v1beta2 API keeps the
// v1beta1 form: api/core/v1beta2 ClusterDeprecatedStatus). Both forms
// have type and status (True, False, Unknown).
var conditionLists = []path{
	{"status", "conditions"},
	{"status", "v1beta2", "conditions"},
	{"status", "deprecated", "v1beta1", "conditions"},
}

// conditionTrue says whether the condition typ is True in the first list
// that has it (conditionLists).
func conditionTrue(r reader, typ string) bool {
	for _, list := range conditionLists {
		for _, m := range r.list(list) {
			c := reader{obj: m}
			if c.str(path{"type"}) == typ {
				return strings.EqualFold(c.str(path{"status"}), "True")
			}
		}
	}
	return false
}

func ownerCluster(u *unstructured.Unstructured) string {
	for _, o := range u.GetOwnerReferences() {
		if o.Kind == ClusterGVK.Kind && strings.HasPrefix(o.APIVersion, ClusterGVK.Group+"/") {
			return o.Name
		}
	}
	return u.GetLabels()["cluster.x-k8s.io/cluster-name"]
}

// reader reads typed values from unstructured data and collects errors for
// values of the wrong type, each with its field path.
type reader struct {
	obj  map[string]any
	errs field.ErrorList
}

// path is a field path the reader walks key by key. Its field.Path, which
// builds a string to be walked, is made only for an error: the operator
// reads every AzureCluster on each pass (make bench at N = 1,000: field
// paths' strings were an eighth of the operator's allocations).
type path []string

func (p path) child(keys ...string) path { return append(p[:len(p):len(p)], keys...) }

func (p path) field() *field.Path { return field.NewPath(p[0], p[1:]...) }

func (r *reader) lookup(p path) (any, bool) {
	var cur any = r.obj
	for _, part := range p {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

func (r *reader) str(p path) string {
	v, ok := r.lookup(p)
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.errs = append(r.errs, field.Invalid(p.field(), v, "must be a string"))
	}
	return s
}

func (r *reader) boolean(p path) bool {
	v, ok := r.lookup(p)
	if !ok {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		r.errs = append(r.errs, field.Invalid(p.field(), v, "must be a boolean"))
	}
	return b
}

func (r *reader) strs(p path) []string {
	v, ok := r.lookup(p)
	if !ok {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		r.errs = append(r.errs, field.Invalid(p.field(), fmt.Sprintf("%T", v), "must be a list of strings"))
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			r.errs = append(r.errs, field.Invalid(p.field().Index(i), it, "must be a string"))
			continue
		}
		out = append(out, s)
	}
	return out
}

func (r *reader) list(p path) []map[string]any {
	v, ok := r.lookup(p)
	if !ok {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		r.errs = append(r.errs, field.Invalid(p.field(), fmt.Sprintf("%T", v), "must be a list"))
		return nil
	}
	out := make([]map[string]any, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			r.errs = append(r.errs, field.Invalid(p.field().Index(i), fmt.Sprintf("%T", it), "must be an object"))
			continue
		}
		out = append(out, m)
	}
	return out
}

// absorbItem is absorb under item i of the list at p; the prefix is made
// only when there are errors.
func (r *reader) absorbItem(p path, i int, errs field.ErrorList) {
	if len(errs) > 0 {
		r.absorb(p.field().Index(i), errs)
	}
}

// absorb adds errors found under a sub-path, prefixing their paths.
func (r *reader) absorb(prefix *field.Path, errs field.ErrorList) {
	for _, e := range errs {
		e.Field = prefix.String() + "." + e.Field
		r.errs = append(r.errs, e)
	}
}
