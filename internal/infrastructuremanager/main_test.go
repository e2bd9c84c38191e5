package infrastructuremanager

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the package's kube-apiserver, with keb's CRDs installed.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

func kcpClient(t *testing.T) client.Client {
	t.Helper()
	s := k8sruntime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func createNamespace(t *testing.T, c client.Client, ns string) {
	t.Helper()
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if client.IgnoreAlreadyExists(err) != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}
