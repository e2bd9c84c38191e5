package provisioning_test

import (
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// overrideSource is a ConfigMap or Secret an operator keeps in the control plane.
type overrideSource struct {
	secret    bool
	name      string
	component string
	forLite   bool // labelled default-for-lite: "true", i.e. not for lite plans
	unlabeled bool // no provisioning-runtime-override label: not an override at all
	data      map[string]string
}

func createOverrideSources(t *testing.T, ns string, sources []overrideSource) {
	t.Helper()
	c := kcpClient(t)
	for _, s := range sources {
		labels := map[string]string{}
		if !s.unlabeled {
			labels[overrides.LabelOverride] = "true"
		}
		if s.component != "" {
			labels[overrides.LabelComponent] = s.component
		}
		if s.forLite {
			labels[overrides.LabelDefaultForLite] = "true"
		}
		meta := metav1.ObjectMeta{Namespace: ns, Name: s.name, Labels: labels}
		var obj client.Object = &corev1.ConfigMap{ObjectMeta: meta, Data: s.data}
		if s.secret {
			obj = &corev1.Secret{ObjectMeta: meta, StringData: s.data}
		}
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating override source %s: %v", s.name, err)
		}
	}
}

func TestOverrides(t *testing.T) {
	t.Parallel()
	sources := []overrideSource{
		{name: "global", data: map[string]string{"domain": "example.com"}},
		{name: "monitoring-big", component: "monitoring", forLite: true, data: map[string]string{"replicas": "3"}},
		{name: "global-big", forLite: true, data: map[string]string{"size": "large"}},
		{name: "logging-creds", secret: true, component: "logging", data: map[string]string{"password": "s3cr3t"}},
		{name: "stray", unlabeled: true, data: map[string]string{"ignored": "yes"}},
	}
	tests := []struct {
		name    string
		planID  string
		sources []overrideSource
		want    map[string]string // the stored Secret's data
	}{
		{
			name: "full plan gets every override", planID: catalog.AzurePlanID, sources: sources,
			want: map[string]string{"global.domain": "example.com", "global.size": "large",
				"monitoring.replicas": "3", "logging.password": "s3cr3t",
				"_kyma.version": "2.20.0", "_kyma.components": "cluster-essentials,istio,btp-operator"},
		},
		{
			name: "lite plan skips default-for-lite overrides", planID: catalog.AzureLitePlanID, sources: sources,
			want: map[string]string{"global.domain": "example.com", "logging.password": "s3cr3t",
				"_kyma.version": "2.20.0", "_kyma.components": "cluster-essentials,istio,btp-operator"},
		},
		{
			name: "no overrides: only the Kyma version and components", planID: catalog.AWSPlanID,
			want: map[string]string{"_kyma.version": "2.20.0", "_kyma.components": "cluster-essentials,istio,btp-operator"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			createOverrideSources(t, ns, tc.sources)
			op := newOp(t, tc.planID, "")
			op.Instance.RuntimeID = uuid.NewString()
			op.Record.KymaVersion, op.Record.Components = "2.20.0", []string{"cluster-essentials", "istio", "btp-operator"}
			step := &provisioning.Overrides{Catalog: processtest.Catalog(t), KCP: kcpClient(t), Config: testConfig(ns)}
			// Twice: a re-run after a crash must converge on the same Secret.
			for run := range 2 {
				res, err := step.Run(t.Context(), op)
				processtest.MustOutcome(t, "overrides", processtest.Done, res, err)
				wantName := overrides.SecretName(op.Instance.RuntimeID)
				if op.Record.OverridesSecret != wantName {
					t.Fatalf("run %d: recorded overrides secret %q, want %q", run, op.Record.OverridesSecret, wantName)
				}
				s := &corev1.Secret{}
				if err := kcpClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: wantName}, s); err != nil {
					t.Fatalf("run %d: reading the stored overrides: %v", run, err)
				}
				got := map[string]string{}
				for k, v := range s.Data {
					got[k] = string(v)
				}
				if g, w := processtest.MustJSON(t, got), processtest.MustJSON(t, tc.want); g != w {
					t.Errorf("run %d: stored overrides\n got %s\nwant %s", run, g, w)
				}
				if s.Labels[controlplane.LabelRuntimeID] != op.Instance.RuntimeID || s.Labels[controlplane.LabelInstanceID] != op.InstanceID {
					t.Errorf("run %d: stored overrides labels %v lack runtime %s / instance %s", run, s.Labels, op.Instance.RuntimeID, op.InstanceID)
				}
				if s.Type != corev1.SecretTypeOpaque {
					t.Errorf("run %d: secret type %q, want Opaque", run, s.Type)
				}
			}
			if op.Description == "" {
				t.Error("no description set")
			}
			list := &corev1.SecretList{}
			if err := kcpClient(t).List(t.Context(), list, client.InNamespace(ns),
				client.MatchingLabels{controlplane.LabelRuntimeID: op.Instance.RuntimeID}); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 {
				t.Errorf("%d overrides Secrets for the runtime, want 1", len(list.Items))
			}
		})
	}
}

func TestOverridesInvalidComponentIsTemporary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		component string
	}{
		{name: "component named global", component: "global"},
		{name: "component with a dot", component: "a.b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			createOverrideSources(t, ns, []overrideSource{{name: "bad", component: tc.component, data: map[string]string{"k": "v"}}})
			op := newOp(t, catalog.AzurePlanID, "")
			op.Instance.RuntimeID = uuid.NewString()
			op.Record.KymaVersion, op.Record.Components = "2.20.0", []string{"cluster-essentials", "istio", "btp-operator"}
			step := &provisioning.Overrides{Catalog: processtest.Catalog(t), KCP: kcpClient(t), Config: testConfig(ns)}
			res, err := step.Run(t.Context(), op)
			// An operator's mislabelled source: the step keeps retrying (the operator can fix
			// the label) rather than failing users' provisionings for good.
			processtest.MustOutcome(t, step.Name(), processtest.Temporary, res, err)
			if op.Record.OverridesSecret != "" {
				t.Errorf("overrides secret %q recorded although none was stored", op.Record.OverridesSecret)
			}
		})
	}
}
