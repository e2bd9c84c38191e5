package provisioning_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestPipelineStepNames pins the step names and order: names are persisted in every in-flight
// operation's checkpoints, so a rename would re-run a step for them.
func TestPipelineStepNames(t *testing.T) {
	t.Parallel()
	// components moved before overrides (the overrides Secret carries the
	// component list): both share their checkpoint, so an operation in
	// flight has finished both or neither, and the swap re-runs nothing.
	want := []string{"initialization", "resolve_hyperscaler_secret", "components", "overrides",
		"create_runtime", "check_runtime", "apply_kyma", "inject_btp_manager", "check_kyma"}
	steps := provisioning.Pipeline(provisioning.Deps{}).Steps
	if len(steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(steps), len(want))
	}
	for i, s := range steps {
		t.Run(want[i], func(t *testing.T) {
			t.Parallel()
			if s.Name() != want[i] {
				t.Errorf("step %d is %q, want %q", i, s.Name(), want[i])
			}
		})
	}
}

// finisher is a fake of the store's SetProvisioned.
type finisher struct {
	instanceID, providerRegion, dashboardURL string
	parameters                               provisioning.ResolvedParameters
	err                                      error
}

func (f *finisher) SetProvisioned(_ context.Context, instanceID string, p storage.Provisioned) error {
	f.instanceID, f.providerRegion, f.dashboardURL = instanceID, p.ProviderRegion, p.DashboardURL
	if err := json.Unmarshal(p.Parameters, &f.parameters); err != nil {
		return err
	}
	return f.err
}

func TestPipelineSucceededRecordsDashboard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		domain  string
		err     error
		wantURL string
	}{
		{name: "dashboard under the configured domain", domain: "kyma.example.com", wantURL: "https://console.c-1234567.kyma.example.com"},
		{name: "other domain", domain: "kyma.ondemand.com", wantURL: "https://console.c-1234567.kyma.ondemand.com"},
		{name: "store error is returned, for a retry", domain: "kyma.example.com", err: errors.New("db down"),
			wantURL: "https://console.c-1234567.kyma.example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &finisher{err: tc.err}
			cfg := testConfig("unused")
			cfg.Kyma.ShootDomain = tc.domain
			pipe := provisioning.Pipeline(provisioning.Deps{Config: cfg, Finisher: f})
			if pipe.Done == "" {
				t.Error("no description for a succeeded provisioning")
			}
			op := newOp(t, catalog.TrialPlanID, "")
			op.Instance.ShootName = "c-1234567"
			op.Record = process.Record{Provider: "azure", Region: "europe", ProviderRegion: "westeurope",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 1, AutoScalerMax: 1, ZonesCount: 1, Zones: []string{"2"},
				HyperscalerSecret: "trial-azure-1", KymaVersion: "2.20.0"}
			err := pipe.Succeeded(t.Context(), op)
			if !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if f.instanceID != op.InstanceID || f.providerRegion != "westeurope" || f.dashboardURL != tc.wantURL {
				t.Errorf("recorded instance %s region %s URL %s, want %s westeurope %s",
					f.instanceID, f.providerRegion, f.dashboardURL, op.InstanceID, tc.wantURL)
			}
			p := f.parameters
			if p.Region != "europe" || p.MachineType != "Standard_D4s_v5" || p.AutoScalerMin != 1 ||
				len(p.Zones) != 1 || p.Zones[0] != "2" || p.TargetSecret != "trial-azure-1" || p.ShootName != "c-1234567" || p.Provider != "azure" {
				t.Errorf("resolved parameters %+v do not hold the values the runtime was built with", p)
			}
		})
	}
}
