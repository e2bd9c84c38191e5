package provisioning_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// initializedOp is an operation as the steps before create_runtime leave it.
func initializedOp(t *testing.T, planID, params string, d process.Record) *process.Operation {
	t.Helper()
	op := newOp(t, planID, params)
	if d.RuntimeID == "" {
		d.RuntimeID = uuid.NewString()
	}
	d.ShootName = "c-" + strings.ReplaceAll(d.RuntimeID, "-", "")[:7]
	d.ClusterID = uuid.NewString()
	if d.KymaVersion == "" {
		d.KymaVersion = "2.20.0"
	}
	d.OverridesSecret = overrides.SecretName(d.RuntimeID)
	d.HyperscalerSecret = "secret-" + d.Provider
	d.Components = []string{"cluster-essentials", "istio", "monitoring"}
	op.Record = d
	return op
}

func TestCreateRuntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		planID     string
		params     string
		data       process.Record
		wantZones  []string
		wantAdmins []string
	}{
		{
			name: "azure: numbered zones, the user administers", planID: catalog.AzurePlanID,
			data: process.Record{Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
			wantZones: []string{"1", "2", "3"}, wantAdmins: []string{"jane.doe@example.com"},
		},
		{
			name: "gcp: region-letter zones", planID: catalog.GCPPlanID,
			data: process.Record{Provider: "gcp", Region: "europe-west3", ProviderRegion: "europe-west3",
				MachineType: "n2-standard-2", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 2},
			wantZones: []string{"europe-west3-a", "europe-west3-b"}, wantAdmins: []string{"jane.doe@example.com"},
		},
		{
			name: "aws: letter-suffixed zones, administrators given", planID: catalog.AWSPlanID,
			params: `{"name":"x","administrators":["admin1@example.com","admin2@example.com"]}`,
			data: process.Record{Provider: "aws", Region: "eu-central-1", ProviderRegion: "eu-central-1",
				MachineType: "m6i.large", AutoScalerMin: 4, AutoScalerMax: 8, ZonesCount: 3},
			wantZones:  []string{"eu-central-1a", "eu-central-1b", "eu-central-1c"},
			wantAdmins: []string{"admin1@example.com", "admin2@example.com"},
		},
		{
			name: "trial: user region europe, cluster in the provider's region", planID: catalog.TrialPlanID,
			data: process.Record{Provider: "azure", Region: "europe", ProviderRegion: "westeurope",
				MachineType: "Standard_D2s_v5", AutoScalerMin: 1, AutoScalerMax: 1, ZonesCount: 1},
			wantZones: []string{"1"}, wantAdmins: []string{"jane.doe@example.com"},
		},
		{
			name: "upper-case runtime ID: CR named in lower case", planID: catalog.AzurePlanID,
			data: process.Record{RuntimeID: "ABCDEF12-" + uuid.NewString()[9:], Provider: "azure", Region: "eastus",
				ProviderRegion: "eastus", MachineType: "Standard_D2s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 1},
			wantZones: []string{"1"}, wantAdmins: []string{"jane.doe@example.com"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			op := initializedOp(t, tc.planID, tc.params, tc.data)
			d := op.Record
			step := &provisioning.CreateRuntime{KCP: c, Config: testConfig(ns)}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "create_runtime", processtest.Done, res, err)
			if op.Description == "" {
				t.Error("no description set")
			}

			rt := &infrastructuremanager.Runtime{}
			name := strings.ToLower(d.RuntimeID)
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, rt); err != nil {
				t.Fatalf("reading Runtime CR %s/%s: %v", ns, name, err)
			}
			i := op.Instance
			wantLabels := map[string]string{
				"kyma-project.io/instance-id":        i.InstanceID,
				"kyma-project.io/runtime-id":         d.RuntimeID,
				"kyma-project.io/global-account-id":  i.GlobalAccountID,
				"kyma-project.io/subaccount-id":      i.SubAccountID,
				"kyma-project.io/broker-plan-id":     tc.planID,
				"kyma-project.io/broker-plan-name":   i.PlanName,
				"kyma-project.io/region":             d.Region,
				"kyma-project.io/platform-region":    i.PlatformRegion,
				"kyma-project.io/shoot-name":         d.ShootName,
				"operator.kyma-project.io/kyma-name": name,
			}
			for k, v := range wantLabels {
				if rt.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, rt.Labels[k], v)
				}
			}
			want := infrastructuremanager.RuntimeSpec{
				Shoot: infrastructuremanager.RuntimeShoot{
					Name: d.ShootName, PlatformRegion: i.PlatformRegion, Region: d.ProviderRegion,
					SecretBindingName: d.HyperscalerSecret,
					Provider: infrastructuremanager.RuntimeProvider{Type: d.Provider, Workers: []infrastructuremanager.Worker{{
						Name: "cpu-worker-0", MachineType: d.MachineType, Minimum: d.AutoScalerMin,
						Maximum: d.AutoScalerMax, Zones: tc.wantZones,
					}}},
				},
				Security: infrastructuremanager.RuntimeSecurity{Administrators: tc.wantAdmins},
				Kyma: infrastructuremanager.RuntimeKyma{Version: d.KymaVersion, Components: d.Components,
					OverridesSecretRef: d.OverridesSecret},
			}
			if g, w := processtest.MustJSON(t, rt.Spec), processtest.MustJSON(t, want); g != w {
				t.Errorf("spec:\n got %s\nwant %s", g, w)
			}
		})
	}
}

func TestCreateRuntimeIsIdempotent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		runs int
	}{
		{name: "run twice", runs: 2},
		{name: "run three times", runs: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			op := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure", Region: "eastus",
				ProviderRegion: "eastus", MachineType: "Standard_D2s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3})
			step := &provisioning.CreateRuntime{KCP: c, Config: testConfig(ns)}
			var first infrastructuremanager.Runtime
			for run := range tc.runs {
				res, err := step.Run(t.Context(), op)
				processtest.MustOutcome(t, "create_runtime", processtest.Done, res, err)
				list := &infrastructuremanager.RuntimeList{}
				if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				if len(list.Items) != 1 {
					t.Fatalf("run %d: %d Runtime CRs, want 1", run, len(list.Items))
				}
				got := list.Items[0]
				if run == 0 {
					first = got
					continue
				}
				if g, w := processtest.MustJSON(t, got.Spec), processtest.MustJSON(t, first.Spec); g != w {
					t.Errorf("run %d changed the spec:\n got %s\nwant %s", run, g, w)
				}
				if got.ResourceVersion != first.ResourceVersion {
					t.Errorf("run %d rewrote the unchanged CR (resourceVersion %s → %s)", run, first.ResourceVersion, got.ResourceVersion)
				}
			}
		})
	}
}
