package k8stest

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// ListNamespaces uses a kubeconfig as its user would, with client-go: it
// lists the cluster's namespaces.
func ListNamespaces(ctx context.Context, kubeconfig string) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(kubeconfig))
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	return err
}

// WaitRefused waits, for up to a minute, until the API server refuses the
// kubeconfig as unauthenticated (401): an API server caches a token it
// accepted for up to 10 s, so a removed ServiceAccount's token is not
// refused at once.
func WaitRefused(t testing.TB, what, kubeconfig string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err = ListNamespaces(context.Background(), kubeconfig); apierrors.IsUnauthorized(err) {
			return
		}
	}
	t.Fatalf("%s: the kubeconfig still works (or fails otherwise): %v", what, err)
}
