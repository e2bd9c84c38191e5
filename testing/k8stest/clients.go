package k8stest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Scheme is client-go's kinds plus those the add functions register (keb's
// CR packages' AddToScheme).
func Scheme(t testing.TB, add ...func(*k8sruntime.Scheme) error) *k8sruntime.Scheme {
	t.Helper()
	s := k8sruntime.NewScheme()
	for _, f := range append([]func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme}, add...) {
		if err := f(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Client is a client of the environment's apiserver that knows scheme's kinds.
func (e *Environment) Client(t testing.TB, scheme *k8sruntime.Scheme) client.Client {
	t.Helper()
	c, err := client.New(e.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// EnsureNamespace creates ns unless it exists: tests sharing a namespace
// (kcp-system) race to create it.
func EnsureNamespace(t testing.TB, c client.Client, ns string) {
	t.Helper()
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if client.IgnoreAlreadyExists(err) != nil {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}

// StartWatch starts w (a kube.Watched) for the test's lifetime and returns once its watch has
// synced; the test's deadline bounds the wait.
func StartWatch(t testing.TB, w interface {
	Start(ctx context.Context) error
	Synced() bool
}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for !w.Synced() {
		select {
		case err := <-done:
			t.Fatalf("watch stopped before it synced: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
