package provisioning_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// The Kyma CR always goes to kcp-system (controlplane.Namespace), whatever Config.Namespace says, so
// these tests read it there; each runtime ID is unique, so parallel tests do not collide.

func TestApplyKyma(t *testing.T) {
	t.Parallel()
	f := false
	// As the API server keeps them: the CRD's defaults (CreateAndDelete, managed) filled in.
	tr := true
	defaults := []kyma.Module{
		{Name: "btp-operator", CustomResourcePolicy: "CreateAndDelete", Managed: &tr},
		{Name: "istio", CustomResourcePolicy: "CreateAndDelete", Managed: &tr},
		{Name: "api-gateway", CustomResourcePolicy: "CreateAndDelete", Managed: &tr},
	}
	tests := []struct {
		name        string
		params      string
		wantChannel string
		wantModules []kyma.Module
	}{
		{name: "modules absent: default modules incl. btp-operator", params: `{"name":"x"}`,
			wantChannel: "regular", wantModules: defaults},
		{name: "no parameters at all: default modules", wantChannel: "regular", wantModules: defaults},
		{name: "default true: default modules", params: `{"name":"x","modules":{"default":true}}`,
			wantChannel: "regular", wantModules: defaults},
		{name: "default false: no modules", params: `{"name":"x","modules":{"default":false}}`,
			wantChannel: "regular", wantModules: nil},
		{name: "list: exactly those", wantChannel: "regular",
			params: `{"name":"x","modules":{"list":[{"name":"keda"},{"name":"serverless","channel":"fast","customResourcePolicy":"Ignore","managed":false}]}}`,
			wantModules: []kyma.Module{{Name: "keda", CustomResourcePolicy: "CreateAndDelete", Managed: &tr},
				{Name: "serverless", Channel: "fast", CustomResourcePolicy: "Ignore", Managed: &f}}},
		{name: "empty list: no modules", params: `{"name":"x","modules":{"list":[]}}`,
			wantChannel: "regular", wantModules: nil},
		{name: "channel fast with the defaults", params: `{"name":"x","modules":{"channel":"fast"}}`,
			wantChannel: "fast", wantModules: defaults},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ensureNamespace(t, controlplane.Namespace)
			c := kcpClient(t)
			op := initializedOp(t, catalog.AzurePlanID, tc.params, process.Record{Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope"})
			step := &provisioning.ApplyKyma{KCP: c, Catalog: processtest.Catalog(t), Config: testConfig(newNamespace(t))}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "apply_kyma", processtest.Done, res, err)
			if !strings.Contains(op.Description, "Kyma") {
				t.Errorf("description %q does not mention Kyma", op.Description)
			}
			k := &kyma.Kyma{}
			name := strings.ToLower(op.Instance.RuntimeID)
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: controlplane.Namespace, Name: name}, k); err != nil {
				t.Fatalf("reading Kyma CR: %v", err)
			}
			i := op.Instance
			wantLabels := map[string]string{
				"kyma-project.io/instance-id":         i.InstanceID,
				"kyma-project.io/runtime-id":          op.Instance.RuntimeID,
				"kyma-project.io/global-account-id":   i.GlobalAccountID,
				"kyma-project.io/subaccount-id":       i.SubAccountID,
				"kyma-project.io/broker-plan-id":      catalog.AzurePlanID,
				"kyma-project.io/broker-plan-name":    "azure",
				"kyma-project.io/region":              "westeurope",
				"kyma-project.io/platform-region":     i.PlatformRegion,
				"operator.kyma-project.io/kyma-name":  name,
				"operator.kyma-project.io/managed-by": "lifecycle-manager",
				// upstream KEB's, beside the contract's: its own tests select Kyma CRs by them
				"kyma-project.io/shoot-name": i.ShootName,
				"kyma-project.io/provider":   "Azure",
			}
			for key, v := range wantLabels {
				if k.Labels[key] != v {
					t.Errorf("label %s = %q, want %q", key, k.Labels[key], v)
				}
			}
			if want := op.Instance.ShootName + ".kyma.example.com"; k.Annotations["skr-domain"] != want {
				t.Errorf("skr-domain annotation %q, want %q", k.Annotations["skr-domain"], want)
			}
			if k.Spec.Channel != tc.wantChannel {
				t.Errorf("channel %q, want %q", k.Spec.Channel, tc.wantChannel)
			}
			if g, w := processtest.MustJSON(t, k.Spec.Modules), processtest.MustJSON(t, tc.wantModules); g != w {
				t.Errorf("modules:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestApplyKymaLabelsTrialsWithTheirClustersRegion: a trial's request names a
// trial region (europe); the region label is the hyperscaler region its
// cluster runs in, as for every plan.
func TestApplyKymaLabelsTrialsWithTheirClustersRegion(t *testing.T) {
	t.Parallel()
	ensureNamespace(t, controlplane.Namespace)
	c := kcpClient(t)
	op := initializedOp(t, catalog.TrialPlanID, `{"name":"x"}`, process.Record{Provider: "azure", Region: "europe", ProviderRegion: "westeurope"})
	step := &provisioning.ApplyKyma{KCP: c, Catalog: processtest.Catalog(t), Config: testConfig(newNamespace(t))}
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "apply_kyma", processtest.Done, res, err)
	k := &kyma.Kyma{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, k); err != nil {
		t.Fatal(err)
	}
	if k.Labels[controlplane.LabelRegion] != "westeurope" {
		t.Errorf("region label %q, want westeurope", k.Labels[controlplane.LabelRegion])
	}
}

func TestApplyKymaIsIdempotent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params string
	}{
		{name: "default modules", params: `{"name":"x"}`},
		{name: "custom list", params: `{"name":"x","modules":{"list":[{"name":"keda"}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ensureNamespace(t, controlplane.Namespace)
			c := kcpClient(t)
			op := initializedOp(t, catalog.AWSPlanID, tc.params, process.Record{Provider: "aws", Region: "eu-central-1"})
			step := &provisioning.ApplyKyma{KCP: c, Catalog: processtest.Catalog(t), Config: testConfig(newNamespace(t))}
			var first kyma.Kyma
			for run := range 2 {
				res, err := step.Run(t.Context(), op)
				processtest.MustOutcome(t, "apply_kyma", processtest.Done, res, err)
				list := &kyma.KymaList{}
				if err := c.List(t.Context(), list, client.InNamespace(controlplane.Namespace),
					client.MatchingLabels{controlplane.LabelInstanceID: op.InstanceID}); err != nil {
					t.Fatal(err)
				}
				if len(list.Items) != 1 {
					t.Fatalf("run %d: %d Kyma CRs of the instance, want 1", run, len(list.Items))
				}
				if run == 0 {
					first = list.Items[0]
					continue
				}
				got := list.Items[0]
				if g, w := processtest.MustJSON(t, got.Spec), processtest.MustJSON(t, first.Spec); g != w {
					t.Errorf("re-run changed the spec:\n got %s\nwant %s", g, w)
				}
				if got.ResourceVersion != first.ResourceVersion {
					t.Errorf("re-run rewrote the unchanged CR (resourceVersion %s → %s)", first.ResourceVersion, got.ResourceVersion)
				}
			}
		})
	}
}
