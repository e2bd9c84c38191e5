package infrastructuremanager

import (
	"context"
	"reflect"
	"testing"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/testing/k8stest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func fullRuntime(ns, name string) *Runtime {
	return &Runtime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{controlplane.LabelRuntimeID: "rid-" + name}},
		Spec: RuntimeSpec{
			Shoot: RuntimeShoot{
				Name: "c-" + name, Purpose: "production", PlatformRegion: "cf-eu10", Region: "eu-central-1",
				SecretBindingName: "sb-aws",
				Provider: RuntimeProvider{Type: "aws", Workers: []Worker{
					{Name: "cpu-worker-0", MachineType: "m6i.large", Minimum: 3, Maximum: 20, Zones: []string{"eu-central-1a", "eu-central-1b"}},
				}},
			},
			Security: RuntimeSecurity{Administrators: []string{"admin@example.com"}},
			Kyma:     RuntimeKyma{Version: "2.20.0", Components: []string{"btp-operator"}, OverridesSecretRef: "overrides-" + name},
		},
	}
}

// The Go types must survive the real CRD's schema (pruning, enum) unchanged.
func TestRuntimeRoundTripsThroughTheCRD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := kcpClient(t)
	k8stest.EnsureNamespace(t, c, "types-roundtrip")
	want := fullRuntime("types-roundtrip", "full")
	if err := c.Create(ctx, want.DeepCopy()); err != nil {
		t.Fatalf("creating Runtime: %v", err)
	}
	got := &Runtime{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Fatalf("spec after round trip:\n got %+v\nwant %+v", got.Spec, want.Spec)
	}

	got.Status = RuntimeStatus{State: StateReady, Message: "cluster ready"}
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	list := &RuntimeList{}
	if err := c.List(ctx, list, client.InNamespace("types-roundtrip")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Status != got.Status {
		t.Fatalf("listed %+v, want one Runtime with status %+v", list.Items, got.Status)
	}

	bad := fullRuntime("types-roundtrip", "bad-state")
	if err := c.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	bad.Status.State = "Exploded"
	if err := c.Status().Update(ctx, bad); err == nil {
		t.Fatal("the CRD accepted a state outside its enum")
	}
}

func TestRuntimeID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{name: "label wins", labels: map[string]string{controlplane.LabelRuntimeID: "rid"}, want: "rid"},
		{name: "no label falls back to the name", want: "cr-name"},
		{name: "empty label falls back to the name", labels: map[string]string{controlplane.LabelRuntimeID: ""}, want: "cr-name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Runtime{ObjectMeta: metav1.ObjectMeta{Name: "cr-name", Labels: tc.labels}}
			if got := r.RuntimeID(); got != tc.want {
				t.Fatalf("RuntimeID() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeepCopySharesNoMemory(t *testing.T) {
	t.Parallel()
	orig := fullRuntime("ns", "orig")
	list := &RuntimeList{Items: []Runtime{*orig}}
	cases := []struct {
		name   string
		mutate func(r *Runtime)
	}{
		{name: "labels", mutate: func(r *Runtime) { r.Labels[controlplane.LabelRuntimeID] = "changed" }},
		{name: "workers", mutate: func(r *Runtime) { r.Spec.Shoot.Provider.Workers[0].MachineType = "changed" }},
		{name: "zones", mutate: func(r *Runtime) { r.Spec.Shoot.Provider.Workers[0].Zones[0] = "changed" }},
		{name: "administrators", mutate: func(r *Runtime) { r.Spec.Security.Administrators[0] = "changed" }},
		{name: "components", mutate: func(r *Runtime) { r.Spec.Kyma.Components[0] = "changed" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cp := orig.DeepCopyObject().(*Runtime)
			tc.mutate(cp)
			if reflect.DeepEqual(cp, orig) {
				t.Fatal("mutation did not take")
			}
			if !reflect.DeepEqual(orig, fullRuntime("ns", "orig")) {
				t.Fatal("mutating the copy changed the original")
			}
			lc := list.DeepCopyObject().(*RuntimeList)
			tc.mutate(&lc.Items[0])
			if !reflect.DeepEqual(list.Items[0], *fullRuntime("ns", "orig")) {
				t.Fatal("mutating the list copy changed the original list")
			}
		})
	}
}
