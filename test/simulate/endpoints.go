package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// The tenants' own consumers: each tenant has an application network in
// its subscription (resource group appsGroup), an identity of its own
// (allowed in its namespace only, scoped in Azure to its subscription), and
// AzurePrivateEndpoints in its namespace that reach the MC's ingress
// service from that network. They share one Private DNS zone per tenant
// (appsZone, zoneMode Shared) and draw their names, their records and the
// ConfigMaps they publish from small pools, so that names collide.
const (
	appsGroup = "apps"
	appsZone  = "apps.internal"
	// sharedConfigMap is a ConfigMap name several objects ask to publish.
	sharedConfigMap = "endpoints"
)

var (
	endpointNames = []string{"app1", "app2", "app3"}
	recordNames   = []string{"db", "cache", "gw"}
)

func tenantClient(t int) string   { return fmt.Sprintf("tenant-%d", t) }
func tenantSecret(t int) string   { return fmt.Sprintf("tenant-%d-secret", t) }
func tenantIdentity(t int) string { return tenants[t] + "-identity" }

// appsVNet is tenant t's application network.
func appsVNet(t int) string {
	return "/subscriptions/" + tenantSubscription(t) + "/resourceGroups/" + appsGroup + "/providers/Microsoft.Network/virtualNetworks/apps-vnet"
}

// appsScope is the scope of tenant t's application resource group.
func appsScope(t int) string { return scopeOf(tenantSubscription(t), appsGroup) }

// ingressPLSID is the MC's ingress private link service, as capzsim names it.
func ingressPLSID() string {
	return "/subscriptions/" + sandbox.FleetMCSubscription + "/resourceGroups/" + sandbox.FleetMCName +
		"/providers/Microsoft.Network/privateLinkServices/" + sandbox.FleetMCName + "-ingress-privatelink"
}

// setupTenants gives each tenant its application network, its principal
// in Azure and its identity.
func (w *world) setupTenants(ctx context.Context) error {
	seed := azuresim.Seed{}
	for t := range tenants {
		w.sb.Sim.AddPrincipal(azuresim.Principal{TenantID: sandbox.FleetTenantID, ClientID: tenantClient(t), ClientSecret: tenantSecret(t),
			Scopes: []string{"/subscriptions/" + tenantSubscription(t)}})
		seed.ResourceGroups = append(seed.ResourceGroups, azuresim.SeedResourceGroup{SubscriptionID: tenantSubscription(t), Name: appsGroup, Location: sandbox.FleetLocation})
		vnet, err := endpointsVNet(appsVNet(t), 60+t)
		if err != nil {
			return err
		}
		seed.Resources = append(seed.Resources, vnet)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenants[t], Name: tenantSecret(t)},
			Data: map[string][]byte{"clientSecret": []byte(tenantSecret(t))}}
		if err := w.sb.Client.Create(ctx, secret); err != nil {
			return err
		}
		if err := w.sb.Client.Create(ctx, identityObject(t)); err != nil {
			return err
		}
	}
	return w.sb.Sim.Seed(seed)
}

// identityObject is tenant t's AzureClusterIdentity, allowed in its own
// namespace only.
func identityObject(t int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"type": "ServicePrincipal", "tenantID": sandbox.FleetTenantID, "clientID": tenantClient(t),
		"clientSecret":      map[string]any{"name": tenantSecret(t), "namespace": tenants[t]},
		"allowedNamespaces": map[string]any{"list": []any{tenants[t]}},
	}}}
	u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	u.SetNamespace(tenants[t])
	u.SetName(tenantIdentity(t))
	return u
}

// apeSpec is one AzurePrivateEndpoint a history creates.
type apeSpec struct {
	Tenant int
	Name   string
	// Records are its names in the tenant's shared zone.
	Records []string
	// ConfigMap is the ConfigMap it publishes its address in.
	ConfigMap string
	// Manual: the connection waits for the service owner's approval.
	Manual bool
	// Target is the service it connects to: the MC's ingress, or (Foreign)
	// a workload cluster's API service, which is not visible to the
	// tenant's subscription.
	Target  string
	Foreign bool
}

func (a apeSpec) Namespace() string { return tenants[a.Tenant] }
func (a apeSpec) Key() string       { return a.Namespace() + "/" + a.Name }

// excuseKey is the key its grace is recorded under.
func (a apeSpec) excuseKey() string { return "endpoint " + a.Key() }

// EndpointID is its Azure private endpoint (named like the object).
func (a apeSpec) EndpointID() string {
	return strings.ToLower(appsScope(a.Tenant) + "providers/microsoft.network/privateendpoints/" + a.Name)
}

func (a apeSpec) object() *v1alpha1.AzurePrivateEndpoint {
	return &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace(), Name: a.Name},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: tenantSubscription(a.Tenant), ResourceGroup: appsGroup, Location: sandbox.FleetLocation,
			IdentityRef:          &v1alpha1.IdentityReference{Name: tenantIdentity(a.Tenant), Namespace: a.Namespace()},
			SubnetID:             appsVNet(a.Tenant) + "/subnets/endpoints",
			PrivateLinkServiceID: a.Target, ManualApproval: a.Manual,
			DNS:     &v1alpha1.PrivateEndpointDNS{ZoneName: appsZone, ZoneMode: v1alpha1.ZoneModeShared, Records: a.Records, TTL: 60},
			Publish: &v1alpha1.PrivateEndpointPublish{ConfigMapName: a.ConfigMap},
		},
	}
}

// createEndpoint creates an AzurePrivateEndpoint in a random tenant. A
// tenant whose identity was deleted gets it again once it is gone.
func (h *history) createEndpoint(ctx context.Context) error {
	t := h.rnd.IntN(len(tenants))
	if h.identityGoing[t] {
		err := h.w.sb.Client.Get(ctx, client.ObjectKey{Namespace: tenants[t], Name: tenantIdentity(t)}, identityObject(t))
		if err == nil {
			h.logOp("create an endpoint in %s: its identity is still being deleted, none", tenants[t])
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		h.logOp("create the identity of %s again", tenants[t])
		if err := h.w.sb.Client.Create(ctx, identityObject(t)); err != nil {
			return err
		}
		h.identityGoing[t] = false
	}
	a := apeSpec{Tenant: t, Name: endpointNames[h.rnd.IntN(len(endpointNames))], Manual: h.rnd.IntN(10) < 3, Target: ingressPLSID()}
	if h.apes[a.Key()] != nil {
		h.logOp("create %s: it exists, none", a.Key())
		return nil
	}
	for _, i := range h.rnd.Perm(len(recordNames))[:1+h.rnd.IntN(2)] {
		a.Records = append(a.Records, recordNames[i])
	}
	slices.Sort(a.Records)
	a.ConfigMap = a.Name + "-endpoint"
	if h.rnd.IntN(2) == 0 {
		a.ConfigMap = sharedConfigMap
	}
	// One in six names a workload cluster's service, which only the MC's
	// subscription may see: Azure refuses it, nothing is published.
	if l := h.anyPrivate(); l != nil && h.rnd.IntN(6) == 0 {
		a.Target, a.Foreign = l.spec.PLSID(), true
	}
	target := "the MC's ingress"
	if a.Foreign {
		target = "the service of " + h.liveKeyOf(a.Target)
	}
	approval := "automatic"
	if a.Manual {
		approval = "manual"
	}
	h.logOp("create endpoint %s to %s (%s, records %s, ConfigMap %s)", a.Key(), target, approval, strings.Join(a.Records, ","), a.ConfigMap)
	err := h.w.sb.Client.Create(ctx, a.object())
	if apierrors.IsAlreadyExists(err) {
		h.logOp("  %s is still being deleted", a.Key())
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", a.Key(), err)
	}
	h.apes[a.Key()] = &a
	return nil
}

// anyPrivate is a live cluster with a private link, or nil.
func (h *history) anyPrivate() *live {
	var keys []string
	for _, k := range sortedKeys(h.live) {
		if !h.live[k].spec.Public {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return h.live[keys[h.rnd.IntN(len(keys))]]
}

func (h *history) liveKeyOf(pls string) string {
	for _, l := range h.live {
		if l.spec.PLSID() == pls {
			return l.spec.Key()
		}
	}
	return pls
}

func (h *history) anyEndpoint() *apeSpec {
	keys := sortedKeys(h.apes)
	return h.apes[keys[h.rnd.IntN(len(keys))]]
}

func (h *history) deleteEndpoint(ctx context.Context, a *apeSpec) error {
	h.logOp("delete endpoint %s", a.Key())
	delete(h.apes, a.Key())
	return client.IgnoreNotFound(h.w.sb.Client.Delete(ctx, a.object()))
}

// endpointConnection acts, as the owner of the MC's ingress service, on
// the connection of an endpoint object's Azure endpoint: approves it when
// Pending, otherwise rejects or removes it.
func (h *history) endpointConnection(ctx context.Context, a *apeSpec) error {
	for _, e := range h.w.sb.Sim.Endpoints() {
		if strings.ToLower(e.ID) != a.EndpointID() {
			continue
		}
		act := azuresim.ConnectionAction{PrivateLinkServiceID: e.PrivateLinkService, PrivateEndpointID: e.ID}
		what := "approve"
		switch {
		case e.ConnectionState == azuresim.ConnectionPending:
			act.Status = azuresim.ConnectionApproved
		case h.rnd.IntN(2) == 0:
			what, act.Status, act.Description = "reject", azuresim.ConnectionRejected, "the platform rejects it"
			h.excuse(a.excuseKey())
		default:
			what, act.Remove = "remove", true
			h.excuse(a.excuseKey())
		}
		h.logOp("%s the connection of endpoint %s", what, a.Key())
		if err := h.w.sb.Sim.ActOnConnection(act); err != nil {
			h.cfg.logf("  [seed %d] %v (it went meanwhile)", h.seed, err)
		}
		return nil
	}
	h.logOp("act on the connection of endpoint %s: it has no endpoint in Azure", a.Key())
	_ = ctx
	return nil
}

// deleteIdentityFirst deletes a tenant's identity while its endpoint
// objects use it, then the objects: their deletion must still complete,
// and the identity go after them.
func (h *history) deleteIdentityFirst(ctx context.Context) error {
	var users []*apeSpec
	t := -1
	for _, k := range sortedKeys(h.apes) {
		if a := h.apes[k]; !h.identityGoing[a.Tenant] && (t < 0 || a.Tenant == t) {
			t = a.Tenant
			users = append(users, a)
		}
	}
	if t < 0 {
		return h.createEndpoint(ctx)
	}
	h.logOp("delete the identity of %s, then its %d endpoint objects", tenants[t], len(users))
	if err := client.IgnoreNotFound(h.w.sb.Client.Delete(ctx, identityObject(t))); err != nil {
		return err
	}
	h.identityGoing[t] = true
	for _, a := range users {
		if err := h.deleteEndpoint(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// finishEndpoints deletes every endpoint object, then every tenant's
// identity: nothing uses them any more, so they must go.
func (h *history) finishEndpoints(ctx context.Context) error {
	for _, k := range sortedKeys(h.apes) {
		if err := h.deleteEndpoint(ctx, h.apes[k]); err != nil {
			return err
		}
	}
	h.logOp("delete every tenant's identity")
	for t := range tenants {
		if err := client.IgnoreNotFound(h.w.sb.Client.Delete(ctx, identityObject(t))); err != nil {
			return err
		}
	}
	return nil
}

// endpointsLeft are the endpoint objects and tenant identities still
// there, and the ConfigMaps that still carry a published address.
func (h *history) endpointsLeft(ctx context.Context) (stuck, published []string, err error) {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := h.w.sb.Client.List(ctx, list); err != nil {
		return nil, nil, err
	}
	for _, o := range list.Items {
		stuck = append(stuck, "AzurePrivateEndpoint "+o.Namespace+"/"+o.Name)
	}
	for t := range tenants {
		err := h.w.sb.Client.Get(ctx, client.ObjectKey{Namespace: tenants[t], Name: tenantIdentity(t)}, identityObject(t))
		if err == nil {
			stuck = append(stuck, "AzureClusterIdentity "+tenants[t]+"/"+tenantIdentity(t))
		} else if !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
	}
	cms := &corev1.ConfigMapList{}
	if err := h.w.sb.Client.List(ctx, cms); err != nil {
		return nil, nil, err
	}
	for _, cm := range cms.Items {
		if slices.Contains(tenants, cm.Namespace) && cm.Data["ipAddress"] != "" {
			published = append(published, "ConfigMap "+cm.Namespace+"/"+cm.Name+" ipAddress "+cm.Data["ipAddress"])
		}
	}
	return stuck, published, nil
}

// endpointObject is one AzurePrivateEndpoint as a snapshot sees it.
type endpointObject struct {
	Key string
	// EndpointID is its Azure endpoint's ID, lower case; Target the
	// service it asks for, lower case.
	EndpointID, Target string
	Records            []string
	Deleting           bool
}

// publishedMap is a ConfigMap of a tenant's namespace that carries an
// address: Owner is the key of the endpoint object controlling it ("" when
// none does).
type publishedMap struct {
	Key, Owner, IP string
}

// lookEndpoints resolves every record name of the pool from each tenant's
// network (with the snapshot's other DNS reads).
func (w *world) lookEndpointNames(s *snapshot) {
	for t := range tenants {
		for _, r := range recordNames {
			name := r + "." + appsZone
			s.AppResolve[tenants[t]+" "+name] = w.sb.Sim.Resolve(appsVNet(t), name)
		}
	}
}

// lookEndpointObjects reads the endpoint objects and the published
// ConfigMaps (with the snapshot's other API server reads).
func (w *world) lookEndpointObjects(ctx context.Context, s *snapshot) error {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := w.sb.Client.List(ctx, list); err != nil {
		return err
	}
	for _, o := range list.Items {
		if o.Namespace == sandbox.FleetIdentityNS && o.Labels[clusterlink.MCEndpointOfLabel] == sandbox.FleetMCName {
			// The MC's own endpoint beyond its AzureCluster, not a tenant's.
			s.MCPlaced[o.AzurePrivateEndpointName()] = strings.ToLower(o.Spec.SubnetID)
			continue
		}
		s.APEs = append(s.APEs, endpointObject{
			Key:        o.Namespace + "/" + o.Name,
			EndpointID: strings.ToLower("/subscriptions/" + o.Spec.SubscriptionID + "/resourcegroups/" + o.Spec.ResourceGroup + "/providers/microsoft.network/privateendpoints/" + o.AzurePrivateEndpointName()),
			Target:     strings.ToLower(o.Spec.PrivateLinkServiceID), Deleting: o.DeletionTimestamp != nil,
		})
		if o.Spec.DNS != nil {
			s.APEs[len(s.APEs)-1].Records = slices.Clone(o.Spec.DNS.Records)
		}
	}
	cms := &corev1.ConfigMapList{}
	if err := w.sb.Client.List(ctx, cms); err != nil {
		return err
	}
	for _, cm := range cms.Items {
		if !slices.Contains(tenants, cm.Namespace) || cm.Data["ipAddress"] == "" {
			continue
		}
		p := publishedMap{Key: cm.Namespace + "/" + cm.Name, IP: cm.Data["ipAddress"]}
		if ref := metav1.GetControllerOf(&cm); ref != nil && ref.Kind == "AzurePrivateEndpoint" {
			p.Owner = cm.Namespace + "/" + ref.Name
		}
		s.Published = append(s.Published, p)
	}
	return nil
}

// endpointObjects holds what the tenants' endpoint objects publish to the
// invariants: a ConfigMap's address and a record of a shared zone are held
// by the Approved Azure endpoint of the object that publishes them, which
// connects to the service it asks for; a record does not move from one
// object to another while the first exists.
func (l *look) endpointObjects() {
	byKey := map[string]endpointObject{}
	byEndpoint := map[string]endpointObject{}
	for _, o := range l.s.APEs {
		byKey[o.Key] = o
		byEndpoint[o.EndpointID] = o
	}
	for _, p := range l.s.Published {
		if p.Owner == "" {
			continue // a person's ConfigMap, or one the operator let go
		}
		o, ok := byKey[p.Owner]
		if !ok {
			l.flag(InvGoneAddress, "ConfigMap "+p.Key+" "+p.IP, "published by "+p.Owner+", which is gone", false, "")
			continue
		}
		l.objectAddress("ConfigMap "+p.Key, p.IP, o)
	}
	for _, key := range sortedKeys(l.s.AppResolve) {
		l.appRecord(key, l.s.AppResolve[key], byKey, byEndpoint)
	}
}

// appRecord checks one record name of a tenant's shared zone, asked from
// the tenant's network ("<namespace> <name>").
func (l *look) appRecord(key string, r azuresim.Resolution, byKey, byEndpoint map[string]endpointObject) {
	ns, name, _ := strings.Cut(key, " ")
	if r.Status != azuresim.ResolveOK {
		delete(l.k.appRecordOwner, key)
		return
	}
	record, _, _ := strings.Cut(name, ".")
	for _, ip := range r.Addresses {
		subject := "record " + name + " in " + ns + " " + ip
		holder := l.inScope(ip, l.tenantScope(ns))
		if holder == nil {
			l.flag(InvGoneAddress, subject, "no endpoint in the tenant's network holds it", false, "")
			continue
		}
		o, ok := byEndpoint[strings.ToLower(holder.ID)]
		switch {
		case !ok:
			l.flag(InvForeignAddress, subject, "held by "+holder.Name+", which no endpoint object asks for", false, "")
			continue
		case !slices.Contains(o.Records, record):
			l.flag(InvForeignAddress, subject, "held by the endpoint of "+o.Key+", which does not claim "+record, false, "")
			continue
		}
		l.objectAddress(subject, ip, o)
		if was, ok := l.k.appRecordOwner[key]; ok && was != o.Key {
			// A holder being deleted releases its records before its
			// endpoint (so that a freed address is never published):
			// the next claimant may take the name then.
			if prev, exists := byKey[was]; exists && !prev.Deleting {
				l.flag(InvRecordRetargeted, name+" in "+ns, "from "+was+" to "+o.Key, false, "")
				continue
			}
		}
		l.k.appRecordOwner[key] = o.Key
	}
}

// tenantScope is the application scope of the tenant of namespace ns.
func (l *look) tenantScope(ns string) string { return appsScope(slices.Index(tenants, ns)) }

// inScope is the endpoint under scope that holds ip, or nil.
func (l *look) inScope(ip, scope string) *azuresim.EndpointInfo {
	for _, e := range l.holders[ip] {
		if strings.HasPrefix(strings.ToLower(e.ID), scope) {
			return &e
		}
	}
	return nil
}

// objectAddress checks that ip, published for endpoint object o, is held
// by o's own Azure endpoint, Approved and connected to o's target.
func (l *look) objectAddress(subject, ip string, o endpointObject) {
	l.k.objectAddresses++
	ns, _, _ := strings.Cut(o.Key, "/")
	e := l.inScope(ip, l.tenantScope(ns))
	switch {
	case e == nil:
		l.flag(InvGoneAddress, subject, "no endpoint in the tenant's network holds it", false, "")
	case strings.ToLower(e.ID) != o.EndpointID:
		l.flag(InvForeignAddress, subject, "held by "+e.Name+", not by the endpoint of "+o.Key, false, "")
	case strings.ToLower(e.PrivateLinkService) != o.Target:
		l.flag(InvForeignAddress, subject, "held by the endpoint of "+o.Key+", which connects to "+e.PrivateLinkService, false, "")
	case e.ConnectionState != azuresim.ConnectionApproved:
		l.flag(InvUnapprovedAddress, subject, e.Name+" is "+e.ConnectionState, true, "endpoint "+o.Key)
	}
}
