package overrides

import (
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

var apiClient = sync.OnceValues(func() (client.Client, error) { return client.New(env.Config, client.Options{}) })

// setup returns a client and a fresh namespace holding objs (their namespace is set to it), so
// tests run in parallel on one apiserver.
func setup(t *testing.T, objs ...client.Object) (client.Client, string) {
	t.Helper()
	c, err := apiClient()
	if err != nil {
		t.Fatalf("creating client: %v", err)
	}
	ns := "ov-" + uuid.NewString()[:8]
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
	for _, o := range objs {
		o.SetNamespace(ns)
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	return c, ns
}
