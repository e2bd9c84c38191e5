package provisioning

import (
	"context"
	"errors"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process"
)

// accountPool hands out hyperscaler accounts.
type accountPool interface {
	Claim(ctx context.Context, pool hyperscaler.Pool, tenant string) (hyperscaler.Account, error)
	ClaimShared(ctx context.Context, pool hyperscaler.Pool) (hyperscaler.Account, error)
}

// ResolveHyperscalerSecret picks the cloud account the runtime is created
// in: the tenant's own (claimed on first use), or a shared one for plans on
// shared pools.
type ResolveHyperscalerSecret struct {
	Catalog  *catalog.Catalog
	Accounts accountPool
	Config   Config
}

// Name implements process.Step.
func (s *ResolveHyperscalerSecret) Name() string { return "resolve_hyperscaler_secret" }

// SharesCheckpoint implements process.SharedCheckpoint for a tenant's own
// account: its claim label makes a re-run return the same Secret. A shared
// account is picked by usage, which a re-run may pick differently after the
// Runtime CR was created with the first: it is saved at once.
func (s *ResolveHyperscalerSecret) SharesCheckpoint(op *process.Operation) bool {
	return !op.Record.HyperscalerShared
}

// Timeout implements process.TimedStep: how long to wait for a free account.
func (s *ResolveHyperscalerSecret) Timeout() time.Duration { return s.Config.AccountTimeout }

// Run implements process.Step.
func (s *ResolveHyperscalerSecret) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	hsType, err := hyperscaler.HyperscalerType(op.Record.Provider)
	if err != nil {
		return process.Fail("%v", err)
	}
	plan, _ := s.Catalog.PlanByID(op.Instance.PlanID)
	op.Describe("Choosing the %s hyperscaler account for the runtime", hsType)
	var acc hyperscaler.Account
	pool := hyperscaler.Pool{Type: hsType}
	if plan.SharedPool {
		acc, err = s.Accounts.ClaimShared(ctx, pool)
	} else {
		acc, err = s.Accounts.Claim(ctx, pool, op.Instance.GlobalAccountID)
	}
	if errors.Is(err, hyperscaler.ErrNoAccount) {
		op.Describe("Waiting for a free %s hyperscaler account: none is available in the account pool", hsType)
		return process.RetryAfter(s.Config.AccountPoll)
	}
	if err != nil {
		return process.StepResult{}, err
	}
	op.Record.HyperscalerType, op.Record.HyperscalerSecret, op.Record.HyperscalerShared = hsType, acc.Name, acc.Shared
	return process.Done()
}
