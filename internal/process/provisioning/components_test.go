package provisioning_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

func TestComponents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		planID  string
		params  string
		version string
		// previous is what an earlier run recorded: a re-run replaces it.
		previous []string
		want     processtest.Outcome
		has      []string
		hasNot   []string
	}{
		{
			name: "azure: no optional components", planID: catalog.AzurePlanID, version: "2.20.0", want: processtest.Done,
			has:    []string{"cluster-essentials", "istio", "monitoring", "compass-runtime-agent"},
			hasNot: []string{"kiali", "tracing", "service-catalog"},
		},
		{
			name: "kiali requested: installed, tracing not", planID: catalog.AzurePlanID, version: "2.20.0",
			params: `{"name":"x","components":["kiali"]}`, want: processtest.Done,
			has: []string{"kiali", "monitoring"}, hasNot: []string{"tracing"},
		},
		{
			name: "kiali and tracing requested", planID: catalog.GCPPlanID, version: "2.4.1",
			params: `{"name":"x","components":["kiali","tracing"]}`, want: processtest.Done,
			has: []string{"kiali", "tracing"},
		},
		{
			name: "lite plan goes without monitoring", planID: catalog.AzureLitePlanID, version: "2.20.0", want: processtest.Done,
			has: []string{"istio"}, hasNot: []string{"monitoring", "kiali"},
		},
		{
			name: "trial never gets kiali, even when asked", planID: catalog.TrialPlanID, version: "2.20.0",
			params: `{"name":"x","components":["kiali"]}`, want: processtest.Done,
			hasNot: []string{"kiali", "monitoring", "compass-runtime-agent"},
		},
		{
			name: "re-run replaces the previous list", planID: catalog.AzurePlanID, version: "2.20.0",
			previous: []string{"kiali", "old-component"}, want: processtest.Done,
			has: []string{"istio"}, hasNot: []string{"kiali", "old-component"},
		},
		{
			name: "unknown Kyma version fails for good", planID: catalog.AzurePlanID, version: "1.24.0", want: processtest.Failure,
		},
		{
			name: "path-like Kyma version fails for good", planID: catalog.AzurePlanID, version: "../2.x", want: processtest.Failure,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := newOp(t, tc.planID, tc.params)
			op.Record.KymaVersion = tc.version
			op.Record.Components = tc.previous
			step := &provisioning.Components{Catalog: processtest.Catalog(t)}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, step.Name(), tc.want, res, err)
			if tc.want == processtest.Failure {
				if !strings.Contains(res.Failure.Error(), tc.version) {
					t.Errorf("failure %q does not name version %s", res.Failure, tc.version)
				}
				return
			}
			for _, c := range tc.has {
				if !slices.Contains(op.Record.Components, c) {
					t.Errorf("components %v lack %s", op.Record.Components, c)
				}
			}
			for _, c := range tc.hasNot {
				if slices.Contains(op.Record.Components, c) {
					t.Errorf("components %v include %s", op.Record.Components, c)
				}
			}
			seen := map[string]bool{}
			for _, c := range op.Record.Components {
				if seen[c] {
					t.Errorf("component %s listed twice in %v", c, op.Record.Components)
				}
				seen[c] = true
			}
			if op.Record.Components[0] != "cluster-essentials" {
				t.Errorf("installation order starts with %s, want cluster-essentials", op.Record.Components[0])
			}
		})
	}
}
