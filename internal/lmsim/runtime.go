package lmsim

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
)

// runtimeClients keeps one client per kubeconfig: runtimes sharing an API
// server (infrasim's shared mode) share it, and a rewritten kubeconfig (a
// restarted simulator's fresh cluster) gets a new one.
type runtimeClients struct {
	mu      sync.Mutex
	clients map[[sha256.Size]byte]*runtimeCluster
	scheme  *k8sruntime.Scheme
}

// runtimeCluster is one runtime API server and what the stand-in installed
// into it already, so that a reconcile does not ask again.
type runtimeCluster struct {
	client.Client
	// crd: the BtpOperator CRD is served; cr: the default CR was created.
	crd, cr atomic.Bool
}

func newRuntimeClients() *runtimeClients {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, btpmanager.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("lmsim: building the runtime scheme: %v", err)) // static registrations
		}
	}
	return &runtimeClients{clients: map[[sha256.Size]byte]*runtimeCluster{}, scheme: s}
}

// client returns the runtime behind kubeconfig.
func (r *runtimeClients) client(kubeconfig []byte) (*runtimeCluster, error) {
	key := sha256.Sum256(kubeconfig)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[key]; ok {
		return c, nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the runtime's kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	// A runtime torn down under a Kyma CR must not hold a reconcile for long.
	cfg.Timeout = 10 * time.Second
	c, err := client.New(cfg, client.Options{Scheme: r.scheme})
	if err != nil {
		return nil, fmt.Errorf("runtime client: %w", err)
	}
	rc := &runtimeCluster{Client: c}
	r.clients[key] = rc
	return rc, nil
}

// forget drops the client of kubeconfig (its runtime is gone).
func (r *runtimeClients) forget(kubeconfig []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clients, sha256.Sum256(kubeconfig))
}
