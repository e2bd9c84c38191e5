package kyma

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/controlplane"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kyma-keb/keb/testing/k8stest"
)

type versionCase struct {
	name, globalAccount, requested string
	onDemand                       bool
	want                           string
}

func runVersionCases(t *testing.T, c client.Reader, cases []versionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ResolveVersion(t.Context(), c, tc.globalAccount, tc.requested, tc.onDemand, "2.4.0")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("version = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestResolveVersion owns kcp-system/kyma-versions on the shared apiserver: first without the
// ConfigMap, then with it. No other test touches that ConfigMap, so this test runs in parallel.
//
// Every case also runs through NewVersionPins, the watch provisionings read the pins from: it
// must answer as the API server does, and follow the ConfigMap's creation.
func TestResolveVersion(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ensureNamespace(t, c, controlplane.Namespace)
	// Once synced, the pins never reach the API server: a direct read fails here.
	pins, err := NewVersionPins(env.Config, c.Scheme(), noReads{})
	if err != nil {
		t.Fatal(err)
	}
	k8stest.StartWatch(t, pins)
	ctx := t.Context()

	withoutCM := []versionCase{
		{name: "default", globalAccount: "ga-pinned", want: "2.4.0"},
		{name: "on demand", globalAccount: "ga-pinned", requested: "PR-99", onDemand: true, want: "PR-99"},
		{name: "requested but on demand off", globalAccount: "ga-pinned", requested: "PR-99", want: "2.4.0"},
	}
	t.Run("without ConfigMap", func(t *testing.T) { runVersionCases(t, c, withoutCM) })
	t.Run("without ConfigMap, watched", func(t *testing.T) { runVersionCases(t, pins, withoutCM) })

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: VersionsConfigMap},
		Data:       map[string]string{"ga-pinned": "2.3.1", "ga-empty": ""},
	}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatalf("creating ConfigMap: %v", err)
	}

	withCM := []versionCase{
		{name: "pinned account", globalAccount: "ga-pinned", want: "2.3.1"},
		{name: "other account", globalAccount: "ga-other", want: "2.4.0"},
		{name: "empty pin means no pin", globalAccount: "ga-empty", want: "2.4.0"},
		{name: "on demand wins over pin", globalAccount: "ga-pinned", requested: "2.5.0", onDemand: true, want: "2.5.0"},
		{name: "on demand without request uses pin", globalAccount: "ga-pinned", onDemand: true, want: "2.3.1"},
		{name: "requested but on demand off uses pin", globalAccount: "ga-pinned", requested: "2.5.0", want: "2.3.1"},
	}
	t.Run("with ConfigMap", func(t *testing.T) { runVersionCases(t, c, withCM) })
	// The watch delivers the new ConfigMap; the test's deadline bounds the wait.
	for {
		v, err := ResolveVersion(ctx, pins, "ga-pinned", "", false, "2.4.0")
		if err != nil {
			t.Fatal(err)
		}
		if v == "2.3.1" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Run("with ConfigMap, watched", func(t *testing.T) { runVersionCases(t, pins, withCM) })
}

// noReads is a reader whose reads fail.
type noReads struct{ client.Reader }

func (noReads) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("read from the API server")
}

// TestResolveVersionReadError: a failed read is not mistaken for "no pin" (fake client: the only
// way to make the apiserver fail on demand).
func TestResolveVersionReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("apiserver unavailable")
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return boom
		},
	}).Build()
	_, err := ResolveVersion(t.Context(), c, "ga", "", false, "2.4.0")
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "kyma-versions") {
		t.Errorf("err = %v, want it to wrap %v and name the ConfigMap", err, boom)
	}
}
