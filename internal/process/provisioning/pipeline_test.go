package provisioning_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// TestPipelineStepNames pins the step names and order: names are persisted in every in-flight
// operation's checkpoints, so a rename would re-run a step for them.
func TestPipelineStepNames(t *testing.T) {
	t.Parallel()
	want := []string{"initialization", "resolve_hyperscaler_secret", "overrides", "components",
		"create_runtime", "check_runtime", "apply_kyma", "inject_btp_manager"}
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
	err                                      error
}

func (f *finisher) SetProvisioned(_ context.Context, instanceID, providerRegion, dashboardURL string) error {
	f.instanceID, f.providerRegion, f.dashboardURL = instanceID, providerRegion, dashboardURL
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
			cfg.DashboardDomain = tc.domain
			pipe := provisioning.Pipeline(provisioning.Deps{Config: cfg, Finisher: f})
			if pipe.Done == "" {
				t.Error("no description for a succeeded provisioning")
			}
			op := newOp(t, catalog.TrialPlanID, "")
			op.Data = process.Data{ShootName: "c-1234567", Region: "europe", ProviderRegion: "westeurope"}
			err := pipe.Succeeded(context.Background(), op)
			if !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if f.instanceID != op.InstanceID || f.providerRegion != "westeurope" || f.dashboardURL != tc.wantURL {
				t.Errorf("recorded instance %s region %s URL %s, want %s westeurope %s",
					f.instanceID, f.providerRegion, f.dashboardURL, op.InstanceID, tc.wantURL)
			}
		})
	}
}
