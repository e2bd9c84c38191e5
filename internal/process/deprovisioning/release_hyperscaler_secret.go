package deprovisioning

import (
	"context"
	"fmt"
	"slices"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process"
)

// tenantCounter counts a global account's other instances on a provider.
type tenantCounter interface {
	OtherInstancesOfTenant(ctx context.Context, globalAccountID, provider, exceptInstanceID string, sharedPlanIDs []string) (int, error)
}

// accountReleaser marks a tenant's dedicated account for cleanup.
type accountReleaser interface {
	MarkDirty(ctx context.Context, pool hyperscaler.Pool, tenant string) error
}

// ReleaseHyperscalerSecret gives back a dedicated hyperscaler account once no
// other runtime of the tenant uses it: the account is labelled dirty and
// waits for cleanup. Shared accounts are never released, and neither is the
// account of a suspension: the suspended instance still belongs to the tenant
// and its resumed runtime goes back to the same account.
type ReleaseHyperscalerSecret struct {
	Store    tenantCounter
	Accounts accountReleaser
	// SharedPlanIDs are plans on shared accounts: their instances never
	// keep a tenant's dedicated account.
	SharedPlanIDs []string
}

// Name implements process.Step.
func (s *ReleaseHyperscalerSecret) Name() string { return "release_hyperscaler_secret" }

// Run implements process.Step.
//
// The account is found by the tenant's claim label, not by what the
// provisioning recorded: a DELETE that halts a provisioning between its claim
// and its checkpoint leaves the claim unrecorded, and releasing only recorded
// accounts leaked it for good.
func (s *ReleaseHyperscalerSecret) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Temporary {
		// Marking the account dirty would have it cleaned up (everything in
		// it deleted) and handed to another tenant while this one may resume.
		op.Describe("Keeping the hyperscaler account: the instance is suspended, not deleted")
		return process.Done()
	}
	if op.Record.HyperscalerShared || slices.Contains(s.SharedPlanIDs, op.Instance.PlanID) {
		return process.Done()
	}
	hsType := op.Record.HyperscalerType
	if hsType == "" {
		t, err := hyperscaler.HyperscalerType(op.Record.Provider)
		if err != nil {
			return process.Done() // no pool serves this provider: nothing was claimed
		}
		hsType = t
	}
	op.Describe("Releasing the %s hyperscaler account", hsType)
	others, err := s.Store.OtherInstancesOfTenant(ctx, op.Instance.GlobalAccountID, op.Record.Provider, op.InstanceID, s.SharedPlanIDs)
	if err != nil {
		return process.StepResult{}, err
	}
	if others > 0 {
		return process.Done() // still used by the tenant's other runtimes
	}
	// Idempotent, and a no-op for a tenant that holds no account.
	if err := s.Accounts.MarkDirty(ctx, hyperscaler.Pool{Type: hsType}, op.Instance.GlobalAccountID); err != nil {
		return process.StepResult{}, fmt.Errorf("releasing hyperscaler account: %w", err)
	}
	return process.Done()
}
