package azure

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/msi-dataplane/pkg/dataplane"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Reasons for identity problems, for conditions and events. They are all
// terminal: a person must fix the identity, its Secret or the cluster.
const (
	ReasonNoIdentity         = "IdentityRefMissing"
	ReasonIdentityNotFound   = "IdentityNotFound"
	ReasonIdentityInvalid    = "IdentityInvalid"
	ReasonIdentityNotAllowed = "IdentityNotAllowedInNamespace"
	ReasonIdentitySecret     = "IdentitySecretUnavailable"
	// ReasonOwnCredentialNotAllowed: an object without identityRef in a
	// namespace that may not use the operator's own credential.
	ReasonOwnCredentialNotAllowed = "OperatorCredentialNotAllowed"
	ReasonUnknownCloud            = "UnknownAzureEnvironment"
	defaultSecretRecheckAfter     = 5 * time.Minute
	defaultTokenFile              = "/var/run/secrets/azure/tokens/azure-identity-token" //nolint:gosec // G101: a well-known path, not a credential
	federatedTokenFileEnv         = "AZURE_FEDERATED_TOKEN_FILE"
)

// IdentityError says why a cluster's identity cannot be used.
type IdentityError struct {
	Reason  string
	Message string
}

func (e *IdentityError) Error() string { return e.Message }

func identityErr(reason, format string, args ...any) error {
	return &IdentityError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Credentials builds token credentials from AzureClusterIdentity objects and
// caches them: one per identity and cloud, rebuilt when the identity or its
// Secret changes. Nothing is built per reconcile.
type Credentials struct {
	// Reader reads AzureClusterIdentity and Namespace objects, normally the
	// manager's cache.
	Reader client.Reader
	// SecretReader reads Secrets, normally uncached: the operator gets the
	// few Secrets identities reference instead of watching all of them.
	SecretReader client.Reader
	Clouds       Clouds
	// Done, closed on shutdown, stops the background work of credentials
	// that refresh themselves (UserAssignedIdentityCredential watches its
	// file). A replaced or forgotten credential's work stops at once.
	Done <-chan struct{}
	// Own builds the operator's own credential for a cloud, used by objects
	// that name no identity (AzurePrivateLinkService without identityRef).
	// Nil: such objects are refused with IdentityRefMissing.
	Own func(cloud.Configuration, policy.Transporter) (azcore.TokenCredential, error)
	// OwnNamespaces are the namespaces whose objects may use Own; "*"
	// allows every namespace. Empty allows none: the operator's identity is
	// powerful, and anyone who may create an object in a namespace would
	// otherwise act with it.
	OwnNamespaces []string
	// SecretRecheckAfter is how long a cached credential is used before its
	// Secret is read again to notice a rotation. Default 5 minutes.
	SecretRecheckAfter time.Duration
	Log                logr.Logger
	// Clock tells the time; default the real clock.
	Clock clock.PassiveClock

	mu    sync.Mutex
	cache map[string]*credEntry // identity UID + cloud name
}

type credEntry struct {
	cred azcore.TokenCredential
	// stop ends the credential's background work, if it has any.
	stop context.CancelFunc
	// built and secret are what the credential was built from: the
	// identity's credential fields and a digest of its Secret's value.
	// Neither is a resourceVersion: a CAPZ that writes its identity
	// finalizer (the fork, releases before CAPZ's #3552) adds one for every
	// cluster that uses the identity, the identity guard adds one to the
	// Secret, and a credential rebuilt for each such change asks Azure AD
	// for a new token (611 token requests at 1,000 clusters, issue 41).
	built     credentialInput
	secret    [sha256.Size]byte
	checked   time.Time
	cloud     cloud.Configuration
	transport policy.Transporter
}

// Credential is a usable credential for one cluster.
type Credential struct {
	azcore.TokenCredential
	// Cloud has the endpoints the credential and ARM clients must use.
	Cloud cloud.Configuration
	// Transport trusts a custom cloud's CA; nil means the default.
	Transport policy.Transporter
	// Key identifies the credential for client caches.
	Key string
}

// Subject is what asks for a credential: an AzureCluster, or one of the
// operator's own objects.
type Subject struct {
	// Kind, Namespace and Name name the object in messages.
	Kind, Namespace, Name string
	// IdentityRef is the AzureClusterIdentity; nil means the operator's own
	// credential when AllowOwn is set and the operator has one.
	IdentityRef      *capz.ObjectRef
	AzureEnvironment string
	// AllowOwn lets a subject without IdentityRef use the operator's own
	// credential. AzureClusters never do: like CAPZ, they need an identity.
	AllowOwn bool
}

// SubjectOf is the subject of an AzureCluster.
func SubjectOf(ac *capz.AzureCluster) Subject {
	return Subject{Kind: "AzureCluster", Namespace: ac.Namespace, Name: ac.Name, IdentityRef: ac.IdentityRef, AzureEnvironment: ac.AzureEnvironment}
}

// For returns the credential of the cluster's AzureClusterIdentity.
func (c *Credentials) For(ctx context.Context, ac *capz.AzureCluster) (*Credential, error) {
	return c.ForSubject(ctx, SubjectOf(ac))
}

// ForSubject returns the credential of the subject's AzureClusterIdentity,
// or the operator's own credential when it names none and Own is set.
func (c *Credentials) ForSubject(ctx context.Context, sub Subject) (*Credential, error) {
	if sub.IdentityRef == nil && sub.AllowOwn && c.Own != nil {
		if !slices.Contains(c.OwnNamespaces, "*") && !slices.Contains(c.OwnNamespaces, sub.Namespace) {
			return nil, identityErr(ReasonOwnCredentialNotAllowed,
				"%s %s/%s sets no spec.identityRef, and namespace %s may not use the operator's own credential (--operator-credential-namespaces); set spec.identityRef",
				sub.Kind, sub.Namespace, sub.Name, sub.Namespace)
		}
		return c.own(sub.AzureEnvironment)
	}
	if sub.IdentityRef == nil {
		return nil, identityErr(ReasonNoIdentity, "spec.identityRef is not set, so the operator has no Azure credential for %s %s/%s", sub.Kind, sub.Namespace, sub.Name)
	}
	cfg, caFile, err := c.Clouds.Resolve(sub.AzureEnvironment)
	if err != nil {
		return nil, identityErr(ReasonUnknownCloud, "%s", err.Error())
	}
	id, err := c.identity(ctx, sub)
	if err != nil {
		return nil, err
	}
	cacheKey := id.UID + "|" + sub.AzureEnvironment
	c.mu.Lock()
	entry := c.cache[cacheKey]
	c.mu.Unlock()
	now := c.now()
	input := credentialInputOf(id)
	if entry != nil && entry.built == input && (!id.NeedsSecret() || now.Sub(entry.checked) < c.recheckAfter()) {
		return &Credential{TokenCredential: entry.cred, Cloud: entry.cloud, Transport: entry.transport, Key: cacheKey}, nil
	}
	secret, err := c.secret(ctx, id)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256([]byte(secret))
	if entry != nil && entry.built == input && entry.secret == digest {
		c.mu.Lock()
		entry.checked = now
		c.mu.Unlock()
		return &Credential{TokenCredential: entry.cred, Cloud: entry.cloud, Transport: entry.transport, Key: cacheKey}, nil
	}
	transport, err := transportFor(caFile)
	if err != nil {
		return nil, identityErr(ReasonUnknownCloud, "the CA file of cloud %q: %v", sub.AzureEnvironment, err)
	}
	// Building is local (no network), so it is done under the lock: two
	// reconciles never build the same credential twice.
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.cache[cacheKey]; e != nil && e.built == input && e.secret == digest && e != entry {
		return &Credential{TokenCredential: e.cred, Cloud: e.cloud, Transport: e.transport, Key: cacheKey}, nil
	}
	bctx, stop := c.entryContext()
	cred, err := c.build(bctx, id, secret, cfg, transport)
	if err != nil {
		stop()
		return nil, err
	}
	entry = &credEntry{cred: cred, stop: stop, built: input, secret: digest, checked: now, cloud: cfg, transport: transport}
	c.replace(cacheKey, entry)
	c.Log.Info("Built Azure credential", "identity", id.Namespace+"/"+id.Name, "type", id.Spec.Type)
	return &Credential{TokenCredential: cred, Cloud: cfg, Transport: transport, Key: cacheKey}, nil
}

// Forget drops a cached credential, for example after Azure rejected it, so
// that the next use reads the identity and its Secret again.
func (c *Credentials) Forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replace(key, nil)
}

// replace sets (or, with nil, removes) the cache entry for key and stops
// the background work of the entry it replaces. c.mu must be held.
func (c *Credentials) replace(key string, e *credEntry) {
	if old := c.cache[key]; old != nil && old != e && old.stop != nil {
		old.stop()
	}
	if e == nil {
		delete(c.cache, key)
		return
	}
	if c.cache == nil {
		c.cache = map[string]*credEntry{}
	}
	c.cache[key] = e
}

// entryContext bounds one cached credential's background work: it ends
// when the entry is replaced or forgotten (the returned cancel) or when
// c.Done closes.
func (c *Credentials) entryContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	if c.Done != nil {
		go func() {
			select {
			case <-c.Done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// own returns the operator's own credential for a cloud, built once.
func (c *Credentials) own(env string) (*Credential, error) {
	cfg, caFile, err := c.Clouds.Resolve(env)
	if err != nil {
		return nil, identityErr(ReasonUnknownCloud, "%s", err.Error())
	}
	cacheKey := "operator|" + env
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.cache[cacheKey]; e != nil {
		return &Credential{TokenCredential: e.cred, Cloud: e.cloud, Transport: e.transport, Key: cacheKey}, nil
	}
	transport, err := transportFor(caFile)
	if err != nil {
		return nil, identityErr(ReasonUnknownCloud, "the CA file of cloud %q: %v", env, err)
	}
	cred, err := c.Own(cfg, transport)
	if err != nil {
		return nil, identityErr(ReasonCredentialUnavailable, "the operator's own credential: %s", firstLine(err.Error()))
	}
	c.replace(cacheKey, &credEntry{cred: cred, cloud: cfg, transport: transport})
	c.Log.Info("Built the operator's own Azure credential", "cloud", env)
	return &Credential{TokenCredential: cred, Cloud: cfg, Transport: transport, Key: cacheKey}, nil
}

// OwnDefault builds the operator's own credential the way the Azure SDK's
// DefaultAzureCredential does (environment, workload identity, managed
// identity), for the given cloud.
func OwnDefault(cfg cloud.Configuration, transport policy.Transporter) (azcore.TokenCredential, error) {
	return azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
		ClientOptions:            azcore.ClientOptions{Cloud: cfg, Transport: transport},
		DisableInstanceDiscovery: isCustom(cfg),
	})
}

// identity reads the subject's identity and checks that its namespace may
// use it.
func (c *Credentials) identity(ctx context.Context, ac Subject) (*Identity, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	ref := client.ObjectKey{Namespace: ac.IdentityRef.Namespace, Name: ac.IdentityRef.Name}
	if err := c.Reader.Get(ctx, ref, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, identityErr(ReasonIdentityNotFound, "AzureClusterIdentity %s referenced by spec.identityRef does not exist", ref)
		}
		return nil, err
	}
	id, err := ParseIdentity(u)
	if err != nil {
		return nil, identityErr(ReasonIdentityInvalid, "%s", err.Error())
	}
	ok, err := id.Allows(ctx, NamespaceLabels(c.Reader), ac.Namespace)
	var malformed *AllowedNamespacesError
	if errors.As(err, &malformed) {
		return nil, identityErr(ReasonIdentityInvalid, "%s", err.Error())
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, identityErr(ReasonIdentityNotAllowed,
			"AzureClusterIdentity %s does not allow namespace %s in spec.allowedNamespaces", ref, ac.Namespace)
	}
	return id, nil
}

// secret returns the credential from the identity's Secret; nothing for
// identities without a Secret.
func (c *Credentials) secret(ctx context.Context, id *Identity) (string, error) {
	if !id.NeedsSecret() {
		return "", nil
	}
	ref := id.SecretRef()
	if ref.Name == "" {
		return "", identityErr(ReasonIdentityInvalid, "AzureClusterIdentity %s/%s of type %s has no spec.clientSecret", id.Namespace, id.Name, id.Spec.Type)
	}
	s := &corev1.Secret{}
	if err := c.SecretReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", identityErr(ReasonIdentitySecret, "Secret %s/%s of AzureClusterIdentity %s/%s does not exist", ref.Namespace, ref.Name, id.Namespace, id.Name)
		}
		return "", err
	}
	v := s.Data[SecretKey]
	if len(v) == 0 {
		return "", identityErr(ReasonIdentitySecret, "Secret %s/%s has no key %q", ref.Namespace, ref.Name, SecretKey)
	}
	return string(v), nil
}

// credentialInput is every field of an identity that build reads. Its
// allowedNamespaces are not among them: they are checked on every use.
type credentialInput struct {
	Type, TenantID, ClientID, CertPath string
	Secret                             SecretReference
	UAPath, UACloudType                string
}

func credentialInputOf(id *Identity) credentialInput {
	s := id.Spec
	return credentialInput{Type: s.Type, TenantID: s.TenantID, ClientID: s.ClientID, CertPath: s.CertPath, Secret: id.SecretRef(),
		UAPath: s.UserAssignedIdentityCredentialsPath, UACloudType: s.UserAssignedIdentityCredentialsCloudType}
}

// build makes the credential for an identity type, the way CAPZ does.
func (c *Credentials) build(ctx context.Context, id *Identity, secret string, cfg cloud.Configuration, transport policy.Transporter) (azcore.TokenCredential, error) {
	opts := azcore.ClientOptions{Cloud: cfg, Transport: transport}
	s := id.Spec
	var cred azcore.TokenCredential
	var err error
	switch s.Type {
	case ServicePrincipal, ManualServicePrincipal:
		cred, err = azidentity.NewClientSecretCredential(s.TenantID, s.ClientID, secret, &azidentity.ClientSecretCredentialOptions{
			ClientOptions: opts, DisableInstanceDiscovery: isCustom(cfg),
		})
	case ServicePrincipalCertificate:
		pem := []byte(secret)
		if s.CertPath != "" {
			if pem, err = os.ReadFile(s.CertPath); err != nil {
				return nil, identityErr(ReasonIdentitySecret, "reading spec.certPath of AzureClusterIdentity %s/%s: %v", id.Namespace, id.Name, err)
			}
		}
		certs, key, perr := azidentity.ParseCertificates(pem, nil)
		if perr != nil {
			return nil, identityErr(ReasonIdentitySecret, "the certificate of AzureClusterIdentity %s/%s cannot be parsed: %v", id.Namespace, id.Name, perr)
		}
		cred, err = azidentity.NewClientCertificateCredential(s.TenantID, s.ClientID, certs, key, &azidentity.ClientCertificateCredentialOptions{
			ClientOptions: opts, DisableInstanceDiscovery: isCustom(cfg),
		})
	case UserAssignedMSI:
		cred, err = azidentity.NewManagedIdentityCredential(&azidentity.ManagedIdentityCredentialOptions{
			ClientOptions: opts, ID: azidentity.ClientID(s.ClientID),
		})
	case WorkloadIdentity:
		cred, err = azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions: opts, TenantID: s.TenantID, ClientID: s.ClientID, TokenFilePath: tokenFile(),
			DisableInstanceDiscovery: isCustom(cfg),
		})
	case UserAssignedIdentityCredential:
		// The credentials file names its own authority; CAPZ passes only the
		// cloud type.
		uaOpts := azcore.ClientOptions{Cloud: credentialsCloud(s.UserAssignedIdentityCredentialsCloudType, cfg), Transport: transport}
		log := c.Log.WithName("user-assigned-identity-credential")
		cred, err = dataplane.NewUserAssignedIdentityCredential(ctx, s.UserAssignedIdentityCredentialsPath,
			dataplane.WithClientOpts(uaOpts), dataplane.WithLogger(&log))
	default:
		return nil, identityErr(ReasonIdentityInvalid, "identity type %q is not supported", s.Type)
	}
	if err != nil {
		return nil, identityErr(ReasonIdentityInvalid, "AzureClusterIdentity %s/%s: %s", id.Namespace, id.Name, firstLine(err.Error()))
	}
	return cred, nil
}

// credentialsCloud is CAPZ's mapping of userAssignedIdentityCredentialsCloudType;
// an unknown value keeps the cluster's cloud, so custom clouds work.
func credentialsCloud(cloudType string, clusterCloud cloud.Configuration) cloud.Configuration {
	switch strings.ToUpper(cloudType) {
	case "PUBLIC":
		return cloud.AzurePublic
	case "CHINA":
		return cloud.AzureChina
	case "USGOVERNMENT":
		return cloud.AzureGovernment
	}
	return clusterCloud
}

// isCustom reports a cloud the identity library does not know, where
// instance discovery (a call to login.microsoftonline.com) must be off.
func isCustom(cfg cloud.Configuration) bool {
	switch cfg.ActiveDirectoryAuthorityHost {
	case cloud.AzurePublic.ActiveDirectoryAuthorityHost, cloud.AzureChina.ActiveDirectoryAuthorityHost, cloud.AzureGovernment.ActiveDirectoryAuthorityHost:
		return false
	}
	return true
}

func tokenFile() string {
	if p := strings.TrimSpace(os.Getenv(federatedTokenFileEnv)); p != "" {
		return p
	}
	return defaultTokenFile
}

// transportFor trusts a custom cloud's CA beside the system roots.
func transportFor(caFile string) (policy.Transporter, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := ReadConfigFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in it")
	}
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("http.DefaultTransport was replaced by a transport the operator cannot configure")
	}
	tr := base.Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	// As many idle connections as the Azure SDK's default transport keeps
	// (sdk/internal transport.go: 100, 10 per host), the one used without
	// a CA file; Go's default of 2 per host has concurrent workers open a
	// TLS connection for most requests.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 100, 10
	return &http.Client{Transport: tr}, nil
}

func (c *Credentials) now() time.Time {
	if c.Clock != nil {
		return c.Clock.Now()
	}
	return time.Now()
}

func (c *Credentials) recheckAfter() time.Duration {
	if c.SecretRecheckAfter > 0 {
		return c.SecretRecheckAfter
	}
	return defaultSecretRecheckAfter
}
