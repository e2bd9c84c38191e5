package kube_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kyma-keb/keb/internal/kube"
	"github.com/kyma-keb/keb/testing/k8stest"
)

var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

// countingClient is a client on the test apiserver that counts its requests.
type countingClient struct {
	client.Client
	requests *atomic.Int64
}

func newClient(t *testing.T) countingClient {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	n := &atomic.Int64{}
	cfg.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) { n.Add(1); return next.RoundTrip(r) })
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return countingClient{Client: c, requests: n}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// secretWith returns a Secret keyed like the steps' objects (name and
// namespace only) and the mutate function that sets its labels and data.
func secretWith(ns, name, value string) (*corev1.Secret, controllerutil.MutateFn) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return s, func() error {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels["owner"] = "keb"
		s.Data = map[string][]byte{"value": []byte(value)}
		return nil
	}
}

func TestCreateOrUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t)
	ns := "kube-" + uuid.NewString()[:8]
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	// A new object costs one request: the create.
	s, mutate := secretWith(ns, "s", "one")
	before := c.requests.Load()
	res, err := kube.CreateOrUpdate(ctx, c, s, mutate)
	if err != nil || res != controllerutil.OperationResultCreated {
		t.Fatalf("first CreateOrUpdate = %v, %v; want created", res, err)
	}
	if n := c.requests.Load() - before; n != 1 {
		t.Errorf("creating a new object took %d requests, want 1", n)
	}

	// Someone else labels it; a re-run with other data updates the data
	// and keeps the foreign label, as controllerutil.CreateOrUpdate does.
	stored := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), stored); err != nil {
		t.Fatal(err)
	}
	stored.Labels["other"] = "tool"
	if err := c.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	s, mutate = secretWith(ns, "s", "two")
	if res, err := kube.CreateOrUpdate(ctx, c, s, mutate); err != nil || res != controllerutil.OperationResultUpdated {
		t.Fatalf("CreateOrUpdate of an existing object = %v, %v; want updated", res, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), stored); err != nil {
		t.Fatal(err)
	}
	if string(stored.Data["value"]) != "two" || stored.Labels["other"] != "tool" || stored.Labels["owner"] != "keb" {
		t.Errorf("stored labels %v, data %q; want both labels and the new data", stored.Labels, stored.Data["value"])
	}

	// The same again changes nothing.
	s, mutate = secretWith(ns, "s", "two")
	if res, err := kube.CreateOrUpdate(ctx, c, s, mutate); err != nil || res != controllerutil.OperationResultNone {
		t.Fatalf("CreateOrUpdate with nothing to change = %v, %v; want unchanged", res, err)
	}
}
