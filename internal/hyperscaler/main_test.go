package hyperscaler

import (
	"sync"
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/testing/k8stest"
)

var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

// apiClient is one uncached client for the package's apiserver, as NewAccountPool requires, knowing
// Gardener's binding kinds.
var apiClient = sync.OnceValues(func() (client.Client, error) {
	scheme := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, core.AddToScheme, security.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(env.Config, client.Options{Scheme: scheme})
})

// azure is the plain azure pool (not EU access).
var azure = Pool{Type: TypeAzure}

// testBundle is a fresh pool in its own namespace, so tests run in parallel on one apiserver.
type testBundle struct {
	c    client.Client
	ns   string
	pool *AccountPool
}

// setup creates a namespace holding the given pool accounts as CredentialsBindings (each with its
// Secret) and a pool over it counting usage with usage (nil: zero for all).
func setup(t *testing.T, usage UsageCounter, accounts ...poolSecret) *testBundle {
	return setupKind(t, KindCredentialsBinding, usage, accounts...)
}

// setupKind is setup with a pool of kind.
func setupKind(t *testing.T, kind Kind, usage UsageCounter, accounts ...poolSecret) *testBundle {
	t.Helper()
	c, err := apiClient()
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	ns := "hs-" + uuid.NewString()[:8]
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	for _, s := range accounts {
		for _, o := range AccountObjects(kind, ns, s.name, ProviderOf(poolLabels(s.labels).hyperscalerType), s.labels,
			map[string]string{"credentials": "secret-of-" + s.name}) {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("creating %T %s: %v", o, s.name, err)
			}
		}
	}
	return &testBundle{c: c, ns: ns, pool: NewAccountPool(c, kind, ns, usage)}
}

// poolSecret describes an account to put in the pool.
type poolSecret struct {
	name   string
	labels map[string]string
}

// secretOf returns a pool account of hyperscaler type typ with extra labels given as key, value
// pairs, in keb's older spelling (hyperscaler-type).
func secretOf(typ, name string, kv ...string) poolSecret {
	l := map[string]string{LabelHyperscalerType: typ}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return poolSecret{name: name, labels: l}
}

func azureSecret(name string, kv ...string) poolSecret { return secretOf(TypeAzure, name, kv...) }

// labelsOf returns the current labels of every pool object in the bundle's namespace, by name.
func (b *testBundle) labelsOf(t *testing.T) map[string]map[string]string {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(b.pool.kind.listGVK())
	if err := b.c.List(t.Context(), list, client.InNamespace(b.ns)); err != nil {
		t.Fatalf("listing the pool: %v", err)
	}
	out := map[string]map[string]string{}
	for _, s := range list.Items {
		out[s.Name] = s.Labels
	}
	return out
}

// object reads one pool object of the bundle's namespace.
func (b *testBundle) object(t *testing.T, name string) *metav1.PartialObjectMetadata {
	t.Helper()
	o, err := b.pool.get(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
