package update

import (
	"context"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/process"
)

// edpUpdater changes a data tenant's metadata (*edp.Client is one).
type edpUpdater interface {
	UpdateMetadata(ctx context.Context, name string, item edp.MetadataItem) error
}

// EDPUpdate tells EDP the subaccount's new service plan
// (maasConsumerServicePlan) when an update changes the plan, as upstream's
// EDP_Update; an update that keeps the plan does nothing. With
// APP_EDP_REQUIRED, EDP's trouble is retried for 20 minutes and then fails
// the update (a refusal at once); otherwise OptionalEDPUpdate tries about
// twice and goes on with a recorded warning.
type EDPUpdate struct {
	EDP edpUpdater
}

// Name implements process.Step.
func (s *EDPUpdate) Name() string { return "edp_update" }

// Timeout implements process.TimedStep.
func (s *EDPUpdate) Timeout() time.Duration { return 20 * time.Minute }

// Remote implements process.RemoteStep.
func (s *EDPUpdate) Remote() string { return "EDP" }

// Run implements process.Step.
func (s *EDPUpdate) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	r := op.Request
	if r == nil || r.PlanID == "" || r.PlanID == op.Instance.PlanID || r.PlanName == "own_cluster" {
		return process.Done()
	}
	name := edp.TenantName(op.Instance.SubAccountID)
	op.Describe("Telling EDP the subaccount's new service plan")
	err := s.EDP.UpdateMetadata(ctx, name, edp.MetadataItem{Key: edp.KeyServicePlan, Value: edp.ServicePlan(r.PlanName)})
	if err == nil {
		return process.Done()
	}
	if edp.Temporary(err) {
		return process.StepResult{}, fmt.Errorf("updating the EDP service plan: %w", err)
	}
	return process.Fail("EDP refused the subaccount's new service plan: %v", err)
}

// OptionalEDPUpdate is EDPUpdate without APP_EDP_REQUIRED.
type OptionalEDPUpdate struct{ EDPUpdate }

// SkipAfter implements process.SkippableStep: upstream tried about once.
func (s *OptionalEDPUpdate) SkipAfter() time.Duration { return time.Second }

// Leftover implements process.SkippableStep.
func (s *OptionalEDPUpdate) Leftover(op *process.Operation) string {
	return "EDP's service plan of subaccount " + edp.TenantName(op.Instance.SubAccountID) + " not updated"
}
