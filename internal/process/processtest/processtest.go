// Package processtest is the kit the pipelines' step tests share, as rivertest is River's:
// reading a step's outcome, building operations and instances, and the clients a step talks
// through (the control plane's, and a fake of the runtime client cache). Only tests import it.
package processtest

import (
	"sync"
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/internal/hyperscaler"
)

// clients holds one uncached client per apiserver config: a test package asks for its
// apiserver's client in every test, and building one discovers the API each time.
var clients sync.Map // *rest.Config -> client.Client

// Client returns the uncached client on keb's scheme for the apiserver at cfg, built on the
// first call for cfg.
func Client(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	if c, ok := clients.Load(cfg); ok {
		return c.(client.Client)
	}
	s, err := app.Scheme()
	if err != nil {
		t.Fatalf("building keb's scheme: %v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	actual, _ := clients.LoadOrStore(cfg, c)
	return actual.(client.Client)
}

// Namespace creates a namespace named prefix plus a random suffix, so that tests sharing an
// apiserver run in parallel, and returns its name.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := prefix + "-" + uuid.NewString()[:8]
	EnsureNamespace(t, c, ns)
	return ns
}

// EnsureNamespace creates the namespace ns unless it exists (for the names the product
// hard-codes, which several tests share).
func EnsureNamespace(t testing.TB, c client.Client, ns string) {
	t.Helper()
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

// PoolAccount creates one account of a CredentialsBinding pool in ns (the binding with labels,
// and its Secret).
func PoolAccount(t testing.TB, c client.Client, ns, name string, labels map[string]string) {
	t.Helper()
	typ := labels[hyperscaler.LabelHyperscalerTypeUpstream] + labels[hyperscaler.LabelHyperscalerType]
	for _, o := range hyperscaler.AccountObjects(hyperscaler.KindCredentialsBinding, ns, name, hyperscaler.ProviderOf(typ), labels,
		map[string]string{"credentials": "of " + name}) {
		if err := c.Create(t.Context(), o); err != nil {
			t.Fatalf("creating pool account %s: %v", name, err)
		}
	}
}

// PoolLabels returns the labels of every CredentialsBinding in ns, by name.
func PoolLabels(t testing.TB, c client.Client, ns string) map[string]map[string]string {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(security.GroupVersion.WithKind("CredentialsBindingList"))
	if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing the pool: %v", err)
	}
	out := map[string]map[string]string{}
	for _, o := range list.Items {
		out[o.Name] = o.Labels
	}
	return out
}
