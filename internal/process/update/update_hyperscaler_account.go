package update

import (
	"context"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// UpdateHyperscalerAccount picks the cloud account for a runtime that
// changes plan, as provisioning on the new plan would: the new plan's pool
// decides (a trial's shared account becomes the tenant's own account of the
// new provider); the same provider and pool give the account the runtime
// already has.
type UpdateHyperscalerAccount struct {
	Catalog  *catalog.Catalog
	Accounts accountPool
	Store    provisioning.AccountStore
	Config   Config
}

// Name implements process.Step.
func (s *UpdateHyperscalerAccount) Name() string { return "update_hyperscaler_account" }

// Timeout implements process.TimedStep: how long to wait for a free account.
func (s *UpdateHyperscalerAccount) Timeout() time.Duration { return s.Config.AccountTimeout }

// Run implements process.Step.
func (s *UpdateHyperscalerAccount) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if !op.Request.ChangesRuntime() || op.Request.PlanID == op.Instance.PlanID {
		return process.Done()
	}
	after, _, err := planned(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	claim := &provisioning.ResolveHyperscalerSecret{Catalog: s.Catalog, Accounts: s.Accounts, Store: s.Store,
		Config: provisioning.Config{AccountPoll: s.Config.AccountPoll, AccountTimeout: s.Config.AccountTimeout, HAP: s.Config.HAP}}
	res, err := claim.Run(ctx, after)
	op.Record, op.Description = after.Record, after.Description
	return res, err
}
