package runtimeclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/testing/k8stest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func kubeconfigSecret(runtimeID string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)},
		Data:       data,
	}
}

func TestClientCacheKubeconfigNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kcp := kcpClient(t)
	k8stest.EnsureNamespace(t, kcp, controlplane.Namespace)
	cases := []struct {
		name   string
		secret *corev1.Secret // nil: no Secret at all
	}{
		{name: "no secret yet"},
		{name: "secret without the config key", secret: kubeconfigSecret("notfound-nokey", map[string][]byte{"other": []byte("x")})},
		{name: "secret with an empty config key", secret: kubeconfigSecret("notfound-empty", map[string][]byte{infrastructuremanager.KubeconfigKey: nil})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runtimeID := "notfound-none"
			if tc.secret != nil {
				runtimeID = strings.TrimPrefix(tc.secret.Name, "kubeconfig-")
				if err := kcp.Create(ctx, tc.secret); err != nil {
					t.Fatal(err)
				}
			}
			_, err := NewCache(kcp, controlplane.Namespace, testScheme(t), Bounds{}).Client(ctx, runtimeID)
			if !errors.Is(err, ErrKubeconfigNotFound) {
				t.Fatalf("Client() error = %v, want ErrKubeconfigNotFound", err)
			}
		})
	}
}

func TestClientCacheReusesUntilTheKubeconfigChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kcp := kcpClient(t)
	k8stest.EnsureNamespace(t, kcp, controlplane.Namespace)
	const runtimeID = "rotating"
	cache := NewCache(kcp, controlplane.Namespace, testScheme(t), Bounds{})

	if _, err := cache.Client(ctx, runtimeID); !errors.Is(err, ErrKubeconfigNotFound) {
		t.Fatalf("before the Secret exists: error = %v, want ErrKubeconfigNotFound", err)
	}
	secret := kubeconfigSecret(runtimeID, map[string][]byte{infrastructuremanager.KubeconfigKey: kubeconfigFor(t, env.Config, "first")})
	if err := kcp.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	first := mustWorkingClient(t, cache, runtimeID)
	if again := mustWorkingClient(t, cache, runtimeID); again != first {
		t.Fatal("an unchanged Secret gave a new client")
	}

	// A new resourceVersion with the same kubeconfig (a label change) keeps the client.
	secret.Labels = map[string]string{controlplane.LabelRuntimeID: runtimeID}
	if err := kcp.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if relabelled := mustWorkingClient(t, cache, runtimeID); relabelled != first {
		t.Fatal("a label-only change gave a new client")
	}

	// A rotated kubeconfig gives a new client.
	secret.Data[infrastructuremanager.KubeconfigKey] = kubeconfigFor(t, env.Config, "rotated")
	if err := kcp.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	rotated := mustWorkingClient(t, cache, runtimeID)
	if rotated == first {
		t.Fatal("a rotated kubeconfig kept the old client")
	}
	if again := mustWorkingClient(t, cache, runtimeID); again != rotated {
		t.Fatal("the rotated client was not cached")
	}

	cache.Forget(runtimeID)
	if fresh := mustWorkingClient(t, cache, runtimeID); fresh == rotated {
		t.Fatal("Forget kept the client")
	}
	cache.Forget("never-cached") // must not panic
}

// mustWorkingClient gets the runtime's client and proves it reaches the apiserver.
func mustWorkingClient(t *testing.T, cache *Cache, runtimeID string) client.Client {
	t.Helper()
	c, err := cache.Client(context.Background(), runtimeID)
	if err != nil {
		t.Fatalf("Client(%s): %v", runtimeID, err)
	}
	if err := c.List(context.Background(), &corev1.NamespaceList{}); err != nil {
		t.Fatalf("listing namespaces with the runtime client: %v", err)
	}
	return c
}

func TestClientCacheErrors(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	execKubeconfig := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true, interactiveMode: Never}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	cases := []struct {
		name       string
		kubeconfig []byte
		getErr     error
		wantErr    string
	}{
		{name: "reading the secret fails", getErr: errBoom, wantErr: "boom"},
		{name: "kubeconfig is not YAML", kubeconfig: []byte("{not yaml"), wantErr: "parsing kubeconfig"},
		{name: "kubeconfig has no current context", kubeconfig: []byte("apiVersion: v1\nkind: Config\n"), wantErr: "parsing kubeconfig"},
		{name: "kubeconfig runs an exec plugin", kubeconfig: execKubeconfig, wantErr: "exec plugin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kcp := fake.NewClientBuilder().
				WithObjects(kubeconfigSecret("r", map[string][]byte{infrastructuremanager.KubeconfigKey: tc.kubeconfig})).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tc.getErr != nil {
						return tc.getErr
					}
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			_, err := NewCache(kcp, controlplane.Namespace, nil, Bounds{}).Client(context.Background(), "r")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Client() error = %v, want one containing %q", err, tc.wantErr)
			}
			if errors.Is(err, ErrKubeconfigNotFound) {
				t.Fatalf("Client() error = %v must not claim the kubeconfig is missing", err)
			}
		})
	}
}

// The cache keeps at most Max clients, least recently used out first, and
// drops clients unused for Idle: memory stays flat however many runtimes
// come and go.
func TestClientCacheBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kcp := kcpClient(t)
	k8stest.EnsureNamespace(t, kcp, controlplane.Namespace)
	ids := []string{"bounded-a", "bounded-b", "bounded-c"}
	for _, id := range ids {
		if err := kcp.Create(ctx, kubeconfigSecret(id, map[string][]byte{infrastructuremanager.KubeconfigKey: kubeconfigFor(t, env.Config, id)})); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("least recently used goes first", func(t *testing.T) {
		t.Parallel()
		cache := NewCache(kcp, controlplane.Namespace, testScheme(t), Bounds{Max: 2, Idle: time.Hour})
		a := mustWorkingClient(t, cache, ids[0])
		b := mustWorkingClient(t, cache, ids[1])
		mustWorkingClient(t, cache, ids[0]) // a used again: b is now the oldest
		mustWorkingClient(t, cache, ids[2])
		if n := cache.Len(); n != 2 {
			t.Fatalf("cache holds %d clients, want at most 2", n)
		}
		if again := mustWorkingClient(t, cache, ids[0]); again != a {
			t.Error("the recently used client was evicted")
		}
		if again := mustWorkingClient(t, cache, ids[1]); again == b {
			t.Error("the least recently used client was kept beyond the bound")
		}
	})

	t.Run("idle clients expire", func(t *testing.T) {
		t.Parallel()
		cache := NewCache(kcp, controlplane.Namespace, testScheme(t), Bounds{Max: 10, Idle: 200 * time.Millisecond})
		for _, id := range ids {
			mustWorkingClient(t, cache, id)
		}
		deadline := time.Now().Add(30 * time.Second)
		for cache.Len() > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if n := cache.Len(); n != 0 {
			t.Fatalf("%d idle clients still cached", n)
		}
	})
}
