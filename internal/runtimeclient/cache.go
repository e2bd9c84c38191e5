// Package runtimeclient builds and caches clients for provisioned runtimes
// from the kubeconfig Secrets the infrastructure manager writes.
package runtimeclient

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrKubeconfigNotFound is returned (wrapped) while the runtime's kubeconfig
// Secret does not exist yet, or has no kubeconfig in it: the infrastructure
// manager has not finished, so callers retry later rather than fail.
var ErrKubeconfigNotFound = errors.New("runtime kubeconfig not found")

// RequestTimeout bounds every request a runtime client makes: a runtime
// apiserver that hangs must not hold a worker forever.
const RequestTimeout = 30 * time.Second

// Cache builds controller-runtime clients for runtimes from their
// kubeconfig Secrets (namespace/infrastructuremanager.KubeconfigSecretName(runtimeID),
// key infrastructuremanager.KubeconfigKey), and caches them by runtime ID and the Secret's
// resourceVersion: a rotated kubeconfig gives a new client. It is safe for
// concurrent use.
//
// The cache is bounded: at most Bounds.Max clients (the least recently used
// goes first) and none unused for longer than Bounds.Idle. A client holds
// its REST mapper's discovery data and a connection pool, so a cache that
// only grew cost megabytes per hundred runtimes; Forget drops a runtime's
// client as soon as the runtime is gone.
type Cache struct {
	kcp       client.Reader
	namespace string
	scheme    *k8sruntime.Scheme
	// WrapTransport, if set, wraps every runtime client's transport (keb
	// counts apiserver requests with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// mu keeps one build per runtime at a time; clients has its own lock.
	mu      sync.Mutex
	clients *expirable.LRU[string, cachedClient]
}

// Bounds limit a Cache; zero fields take the defaults.
type Bounds struct {
	// Max is how many runtime clients are kept (default 500).
	Max int
	// Idle is how long an unused client is kept (default 10 minutes).
	Idle time.Duration
}

// DefaultBounds are a cache's bounds when Bounds leaves them zero.
var DefaultBounds = Bounds{Max: 500, Idle: 10 * time.Minute}

type cachedClient struct {
	resourceVersion string
	// digest of the kubeconfig: a Secret rewritten with the same kubeconfig
	// (a new resourceVersion, e.g. a label change) keeps its client.
	digest [sha256.Size]byte
	client client.Client
	// http is the client's transport, kept to close its idle connections when
	// the client is dropped: runtimes come and go, their connections must not pile up.
	http *http.Client
}

// NewCache returns a cache reading kubeconfig Secrets in namespace (the
// control plane's, controlplane.Namespace, outside tests) through kcp; the
// clients it builds encode objects with scheme (nil: client-go's scheme).
// kcp may be a cached client: a stale read only delays a rotation until the
// cache catches up.
func NewCache(kcp client.Reader, namespace string, scheme *k8sruntime.Scheme, bounds Bounds) *Cache {
	if bounds.Max <= 0 {
		bounds.Max = DefaultBounds.Max
	}
	if bounds.Idle <= 0 {
		bounds.Idle = DefaultBounds.Idle
	}
	// Evicted clients close their idle connections: runtimes come and go,
	// their connections must not pile up.
	evicted := func(_ string, c cachedClient) { c.http.CloseIdleConnections() }
	return &Cache{kcp: kcp, namespace: namespace, scheme: scheme, clients: expirable.NewLRU(bounds.Max, evicted, bounds.Idle)}
}

// Len is the number of cached clients.
func (c *Cache) Len() int { return c.clients.Len() }

// Client returns a client for the runtime, reusing the cached one while the
// kubeconfig Secret is unchanged. It fails with ErrKubeconfigNotFound (wrapped)
// while the Secret is missing. Clients talk to the apiserver directly (no watch
// cache) and time out after RequestTimeout.
func (c *Cache) Client(ctx context.Context, runtimeID string) (client.Client, error) {
	secret, kubeconfig, err := c.kubeconfig(ctx, runtimeID)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKeyFromObject(secret)
	digest := sha256.Sum256(kubeconfig)

	// Building a client does no I/O (its REST mapper is lazy), so holding the
	// lock while building is cheap and keeps one client per runtime.
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.clients.Peek(runtimeID)
	if ok && (old.resourceVersion == secret.ResourceVersion || old.digest == digest) {
		old.resourceVersion = secret.ResourceVersion
		c.clients.Add(runtimeID, old) // marks it used: idle expiry starts over
		return old.client, nil
	}
	built, err := c.build(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("building client for runtime %s from secret %s: %w", runtimeID, key, err)
	}
	built.resourceVersion, built.digest = secret.ResourceVersion, digest
	if ok {
		old.http.CloseIdleConnections() // replaced, not evicted: no callback
	}
	c.clients.Add(runtimeID, built)
	return built.client, nil
}

// kubeconfig reads the runtime's kubeconfig Secret and the kubeconfig in it;
// ErrKubeconfigNotFound (wrapped) while there is none.
func (c *Cache) kubeconfig(ctx context.Context, runtimeID string) (*corev1.Secret, []byte, error) {
	key := client.ObjectKey{Namespace: c.namespace, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)}
	secret := &corev1.Secret{}
	if err := c.kcp.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("secret %s of runtime %s: %w", key, runtimeID, ErrKubeconfigNotFound)
		}
		return nil, nil, fmt.Errorf("reading kubeconfig secret %s of runtime %s: %w", key, runtimeID, err)
	}
	kubeconfig := secret.Data[infrastructuremanager.KubeconfigKey]
	if len(kubeconfig) == 0 {
		// A Secret without its key is treated like no Secret: the writer is not done.
		return nil, nil, fmt.Errorf("secret %s of runtime %s has no %q key: %w", key, runtimeID, infrastructuremanager.KubeconfigKey, ErrKubeconfigNotFound)
	}
	return secret, kubeconfig, nil
}

// Forget drops the runtime's client, e.g. once the runtime is deprovisioned.
// Removal closes its idle connections.
func (c *Cache) Forget(runtimeID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clients.Remove(runtimeID)
}

func (c *Cache) build(kubeconfig []byte) (cachedClient, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return cachedClient{}, fmt.Errorf("parsing kubeconfig: %w", err)
	}
	// The kubeconfig comes from a Secret, not from an operator's machine: an
	// exec plugin or auth provider in it would run code inside keb.
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return cachedClient{}, errors.New("kubeconfig uses an exec plugin or auth provider, which keb refuses")
	}
	cfg.Timeout = RequestTimeout
	cfg.WrapTransport = c.WrapTransport
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return cachedClient{}, fmt.Errorf("building HTTP client: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: c.scheme, HTTPClient: hc})
	if err != nil {
		return cachedClient{}, fmt.Errorf("building client: %w", err)
	}
	return cachedClient{client: cl, http: hc}, nil
}
