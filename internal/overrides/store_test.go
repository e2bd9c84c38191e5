package overrides

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func sampleOverrides() Overrides {
	return Overrides{
		Global: map[string]string{"disableLegacyConnectivity": "true"},
		Components: map[string]map[string]string{
			"core":  {"database.password": "admin123\n"},
			"istio": {"mtls": "strict"},
		},
	}
}

func TestStore(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"kyma-project.io/instance-id": "inst-1"}
	tests := []struct {
		name     string
		o        Overrides
		wantData map[string]string
		wantErr  bool
	}{
		{
			name: "global and component keys",
			o:    sampleOverrides(),
			wantData: map[string]string{
				"global.disableLegacyConnectivity": "true",
				"core.database.password":           "admin123\n",
				"istio.mtls":                       "strict",
			},
		},
		{
			name:     "empty overrides",
			o:        Overrides{},
			wantData: map[string]string{},
		},
		{
			name:    "component named global",
			o:       Overrides{Components: map[string]map[string]string{"global": {"a": "1"}}},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, ns := setup(t)
			ctx := t.Context()
			err := Store(ctx, c, ns, "overrides-inst-1", labels, tt.o)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			s := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "overrides-inst-1"}, s); err != nil {
				t.Fatalf("getting stored secret: %v", err)
			}
			if s.Type != corev1.SecretTypeOpaque {
				t.Errorf("type = %q, want Opaque", s.Type)
			}
			if !maps.Equal(s.Labels, labels) {
				t.Errorf("labels = %v, want %v", s.Labels, labels)
			}
			got := map[string]string{}
			for k, v := range s.Data {
				got[k] = string(v)
			}
			if !maps.Equal(got, tt.wantData) {
				t.Errorf("data = %v, want %v", got, tt.wantData)
			}
			loaded, err := Load(ctx, c, ns, "overrides-inst-1")
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := Overrides{Global: map[string]string{}, Components: map[string]map[string]string{}}
			maps.Copy(want.Global, tt.o.Global)
			maps.Copy(want.Components, tt.o.Components)
			if !reflect.DeepEqual(loaded, want) {
				t.Errorf("Load = %+v, want %+v", loaded, want)
			}
		})
	}
}

func TestStoreIsIdempotentAndReplacesData(t *testing.T) {
	t.Parallel()
	c, ns := setup(t)
	ctx := t.Context()
	get := func() *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ov"}, s); err != nil {
			t.Fatalf("getting stored secret: %v", err)
		}
		return s
	}
	labels := map[string]string{"kyma-project.io/runtime-id": "rt-1"}
	if err := Store(ctx, c, ns, "ov", labels, sampleOverrides()); err != nil {
		t.Fatalf("first Store: %v", err)
	}
	first := get()
	if err := Store(ctx, c, ns, "ov", labels, sampleOverrides()); err != nil {
		t.Fatalf("second Store: %v", err)
	}
	if rv := get().ResourceVersion; rv != first.ResourceVersion {
		t.Errorf("second Store with the same data wrote: resourceVersion %s, was %s", rv, first.ResourceVersion)
	}

	// Changed overrides replace the data as a whole; labels set by others stay.
	first.Labels["kept"] = "yes"
	if err := c.Update(ctx, first); err != nil {
		t.Fatalf("adding a foreign label: %v", err)
	}
	if err := Store(ctx, c, ns, "ov", labels, Overrides{Global: map[string]string{"only": "this"}}); err != nil {
		t.Fatalf("third Store: %v", err)
	}
	s := get()
	if len(s.Data) != 1 || string(s.Data["global.only"]) != "this" {
		t.Errorf("data after a change = %v, want only global.only=this", s.Data)
	}
	if s.Labels["kept"] != "yes" || s.Labels["kyma-project.io/runtime-id"] != "rt-1" {
		t.Errorf("labels after a change = %v, want the foreign label kept and ours set", s.Labels)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	c, ns := setup(t, secret("bad", nil, map[string]string{"noprefix": "x"}))
	ctx := t.Context()
	if _, err := Load(ctx, c, ns, "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("Load of a missing secret: err = %v, want NotFound", err)
	}
	if _, err := Load(ctx, c, ns, "bad"); err == nil {
		t.Error("Load of a key without prefix succeeded")
	}
}

func TestStoreWriteErrors(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	tests := []struct {
		name  string
		funcs interceptor.Funcs
		// existing is a Secret already there: only then is it read (a new
		// one is created straight away).
		existing []client.Object
	}{
		{name: "read of the existing secret fails", funcs: interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errBoom
		}}, existing: []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kcp-system", Name: "ov"}}}},
		{name: "create fails", funcs: interceptor.Funcs{Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return errBoom
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientBuilder().WithObjects(tt.existing...).WithInterceptorFuncs(tt.funcs).Build()
			if err := Store(t.Context(), c, "kcp-system", "ov", nil, sampleOverrides()); !errors.Is(err, errBoom) {
				t.Errorf("err = %v, want %v", err, errBoom)
			}
		})
	}
}

func TestStoreConcurrentlyCreatesOnce(t *testing.T) {
	t.Parallel()
	c, ns := setup(t)
	errs := make(chan error, 5)
	start := make(chan struct{})
	for range cap(errs) {
		go func() {
			<-start // release all at once: the losers of the create see AlreadyExists and retry
			errs <- Store(context.Background(), c, ns, "ov", nil, sampleOverrides())
		}()
	}
	close(start)
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Store: %v", err)
		}
	}
	loaded, err := Load(t.Context(), c, ns, "ov")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if !reflect.DeepEqual(loaded, sampleOverrides()) {
		t.Errorf("Load = %+v, want %+v", loaded, sampleOverrides())
	}
}

// TestStoreKeepsIntegrationKeys: what an integration wrote with
// SetComponent (IAS's Grafana client, LMS's certificate) survives Store's
// rewrite from the sources, as an upgrade or update does it; the sources'
// own keys are replaced as before, and a source that sets an integration's
// key wins.
func TestStoreKeepsIntegrationKeys(t *testing.T) {
	t.Parallel()
	c, ns := setup(t)
	ctx := t.Context()
	if err := Store(ctx, c, ns, "ov", nil, sampleOverrides()); err != nil {
		t.Fatal(err)
	}
	if err := SetComponent(ctx, c, ns, "ov", "logging", map[string]string{"tls.key": "k", "tls.cert": "c"}); err != nil {
		t.Fatal(err)
	}
	if err := Store(ctx, c, ns, "ov", nil, Overrides{Components: map[string]map[string]string{"logging": {"tls.cert": "from a source"}}}); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ov"}, s); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"logging.tls.key": "k", "logging.tls.cert": "from a source"}
	got := map[string]string{}
	for k, v := range s.Data {
		got[k] = string(v)
	}
	if !maps.Equal(got, want) {
		t.Errorf("data after the rewrite %v, want %v", got, want)
	}
}
