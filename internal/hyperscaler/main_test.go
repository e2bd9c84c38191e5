package hyperscaler

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/testing/k8stest"
)

var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

// apiClient is one uncached client for the package's apiserver, as NewPool requires.
var apiClient = sync.OnceValues(func() (client.Client, error) { return client.New(env.Config, client.Options{}) })

// testBundle is a fresh pool in its own namespace, so tests run in parallel on one apiserver.
type testBundle struct {
	c    client.Client
	ns   string
	pool *AccountPool
}

// setup creates a namespace holding the given pool secrets and a Pool over it counting usage with
// usage (nil: zero for all).
func setup(t *testing.T, usage UsageCounter, secrets ...poolSecret) *testBundle {
	t.Helper()
	c, err := apiClient()
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	ns := "hs-" + uuid.NewString()[:8]
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	for _, s := range secrets {
		obj := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: ns, Labels: s.labels},
			Data:       map[string][]byte{"credentials": []byte("secret-of-" + s.name)},
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating secret %s: %v", s.name, err)
		}
	}
	return &testBundle{c: c, ns: ns, pool: NewAccountPool(c, ns, usage)}
}

// poolSecret describes a Secret to put in the pool.
type poolSecret struct {
	name   string
	labels map[string]string
}

// secretOf returns a pool Secret of hyperscaler type typ with extra labels given as key, value pairs.
func secretOf(typ, name string, kv ...string) poolSecret {
	l := map[string]string{LabelHyperscalerType: typ}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return poolSecret{name: name, labels: l}
}

func azureSecret(name string, kv ...string) poolSecret { return secretOf(TypeAzure, name, kv...) }

// labelsOf returns the current labels of every Secret in the bundle's namespace, by name.
func (b *testBundle) labelsOf(t *testing.T) map[string]map[string]string {
	t.Helper()
	list := &corev1.SecretList{}
	if err := b.c.List(context.Background(), list, client.InNamespace(b.ns)); err != nil {
		t.Fatalf("listing secrets: %v", err)
	}
	out := map[string]map[string]string{}
	for _, s := range list.Items {
		out[s.Name] = s.Labels
	}
	return out
}

// secret reads one Secret of the bundle's namespace.
func (b *testBundle) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := b.c.Get(context.Background(), client.ObjectKey{Namespace: b.ns, Name: name}, s); err != nil {
		t.Fatalf("getting secret %s: %v", name, err)
	}
	return s
}
