package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// AccountPool hands out hyperscaler accounts; *hyperscaler.AccountPool is one.
type AccountPool interface {
	Claim(ctx context.Context, pool hyperscaler.Pool, tenant string) (hyperscaler.Account, error)
	ClaimShared(ctx context.Context, pool hyperscaler.Pool) (hyperscaler.Account, error)
	TenantAccounts(ctx context.Context, pool hyperscaler.Pool, tenant string) ([]string, error)
	ClaimNew(ctx context.Context, pool hyperscaler.Pool, tenant string) (hyperscaler.Account, error)
}

// AccountStore records which account an instance's runtime is created with; *storage.Store is
// one.
type AccountStore interface {
	SetInstanceAccount(ctx context.Context, instanceID, binding string, euAccess bool) error
	LockAccounts(ctx context.Context, globalAccount string, fn func(ctx context.Context, tx storage.AccountTx) error) error
}

// HAP is how provisionings choose their account pool.
type HAP struct {
	// Rules choose the pool; nil: keb's default rules for the catalog's plans.
	Rules *hyperscaler.Rules
	// MultiAccountGlobalAccounts may hold several accounts of a pool ("*": all), each taking at
	// most Limit(provider) instances (0: no limit).
	MultiAccountGlobalAccounts []string
	Limit                      func(provider string) int
}

func (h HAP) multiAccount(globalAccountID string) bool {
	return slices.Contains(h.MultiAccountGlobalAccounts, "*") || slices.Contains(h.MultiAccountGlobalAccounts, globalAccountID)
}

// NoAccountMessage is upstream's answer when the pool has no account left, which a platform
// shows its users.
const NoAccountMessage = "Currently, no unassigned provider accounts are available. Please contact us for further assistance."

// WaitingForAccount is the description of a provisioning (or plan change) that waits for an
// account of the pool selector names, at most timeout (APP_PROVISIONING_ACCOUNT_TIMEOUT): it says what the operator does, since a
// released account stays dirty until it is emptied on the hyperscaler's side and returned.
func WaitingForAccount(selector string, timeout time.Duration) string {
	return fmt.Sprintf("Waiting for a free hyperscaler account (%s): none is free in the account pool. "+
		"Accounts released by deprovisionings stay dirty until they are emptied on the hyperscaler's side; "+
		"`keb pool` lists the pool, `keb pool release NAME` returns an emptied account to it "+
		"(removes its dirty and tenant labels), or add an account with these labels. "+
		"The operation fails if none is free %s after it began waiting", selector, timeout)
}

// ResolveHyperscalerSecret picks the cloud account (Gardener binding) the runtime is created
// with: the HAP rule matching the plan, platform region and hyperscaler region names the pool
// (hyperscalerType, EU access, shared); of a dedicated pool the tenant's own account (claimed on
// first use; for a multi-account global account the one with the most instances under the limit,
// else a new one), of a shared pool the least used. The binding is recorded on the instance.
type ResolveHyperscalerSecret struct {
	Catalog  *catalog.Catalog
	Accounts AccountPool
	// Store records the account on the instance; nil records nothing (multi-account global
	// accounts then get no account).
	Store  AccountStore
	Config Config

	defaults     *hyperscaler.Rules
	defaultsErr  error
	defaultsOnce sync.Once
}

// Name implements process.Step.
func (s *ResolveHyperscalerSecret) Name() string { return "resolve_hyperscaler_secret" }

// SharesCheckpoint implements process.SharedCheckpoint for a tenant's own
// account: its claim label makes a re-run return the same account. A shared
// account is picked by usage, which a re-run may pick differently after the
// Runtime CR was created with the first: it is saved at once.
func (s *ResolveHyperscalerSecret) SharesCheckpoint(op *process.Operation) bool {
	return !op.Record.HyperscalerShared
}

// Timeout implements process.TimedStep: how long to wait for a free account.
func (s *ResolveHyperscalerSecret) Timeout() time.Duration { return s.Config.AccountTimeout }

// rules are the configured rules, or keb's defaults for the catalog.
func (s *ResolveHyperscalerSecret) rules() (*hyperscaler.Rules, error) {
	if s.Config.HAP.Rules != nil {
		return s.Config.HAP.Rules, nil
	}
	s.defaultsOnce.Do(func() {
		var names []string
		for _, p := range s.Catalog.Plans() {
			names = append(names, p.Name)
		}
		s.defaults, s.defaultsErr = hyperscaler.ParseRules(hyperscaler.DefaultRules(names), names, nil)
	})
	return s.defaults, s.defaultsErr
}

// Run implements process.Step.
func (s *ResolveHyperscalerSecret) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	provider, err := hyperscaler.HyperscalerType(op.Record.Provider)
	if err != nil {
		return process.Fail("%v", err)
	}
	rules, err := s.rules()
	if err != nil {
		return process.StepResult{}, err
	}
	pr, hr := op.Instance.PlatformRegion, op.Record.ProviderRegion
	rule, err := rules.Match(op.Instance.PlanName, pr, hr)
	if err != nil {
		return process.Fail("%v", err)
	}
	pool, selector := rule.Pool(provider, pr, hr), rule.Selector(provider, pr, hr)
	op.Describe("Choosing the hyperscaler account for the runtime (%s)", selector)
	tenant := op.Instance.PoolTenant()
	var acc hyperscaler.Account
	multi := !rule.Shared && s.Store != nil && s.Config.HAP.multiAccount(tenant)
	switch {
	case rule.Shared:
		acc, err = s.Accounts.ClaimShared(ctx, pool)
	case multi:
		acc, err = s.claimMulti(ctx, op, pool, provider)
	case s.Store != nil:
		acc, err = s.claimLocked(ctx, op, pool)
	default:
		acc, err = s.Accounts.Claim(ctx, pool, tenant)
	}
	if errors.Is(err, hyperscaler.ErrNoAccount) {
		if started, ok := op.Record.StepStartedAt[s.Name()]; ok && time.Since(started)+s.Config.AccountPoll > s.Config.AccountTimeout {
			return process.Fail("%s (no account matches %s)", NoAccountMessage, selector)
		}
		op.Describe("%s", WaitingForAccount(selector, s.Config.AccountTimeout))
		return process.RetryAfter(s.Config.AccountPoll)
	}
	if err != nil {
		return process.StepResult{}, err
	}
	if s.Store != nil && rule.Shared {
		if err := s.Store.SetInstanceAccount(ctx, op.InstanceID, acc.Name, pool.EUAccess); err != nil {
			return process.StepResult{}, err
		}
	}
	op.Record.HyperscalerType, op.Record.HyperscalerSecret, op.Record.HyperscalerShared = pool.Type, acc.Name, acc.Shared
	op.Record.HyperscalerEUAccess = pool.EUAccess
	return process.Done()
}

// claimLocked claims the tenant's account of pool and records it on the instance under the
// global account's account lock (storage.LockAccounts), which the deprovisioning's release
// takes too: a release either marked the account dirty before (and Claim hands out a fresh
// one) or sees this instance on it after (and keeps it).
func (s *ResolveHyperscalerSecret) claimLocked(ctx context.Context, op *process.Operation, pool hyperscaler.Pool) (hyperscaler.Account, error) {
	tenant := op.Instance.PoolTenant()
	var acc hyperscaler.Account
	err := s.Store.LockAccounts(ctx, tenant, func(ctx context.Context, tx storage.AccountTx) error {
		var err error
		if acc, err = s.Accounts.Claim(ctx, pool, tenant); err != nil {
			return err
		}
		return tx.SetInstanceAccount(ctx, op.InstanceID, acc.Name, pool.EUAccess)
	})
	return acc, err
}

// claimMulti picks a multi-account global account's binding: of its accounts in pool, the one
// with the most instances still under the provider's limit, else a newly claimed one. The count
// and the choice are made under the global account's account lock (storage.LockAccounts), so concurrent
// provisionings (in any replica) never put more instances on an account than the limit.
func (s *ResolveHyperscalerSecret) claimMulti(ctx context.Context, op *process.Operation, pool hyperscaler.Pool, provider string) (hyperscaler.Account, error) {
	tenant := op.Instance.PoolTenant()
	limit := 0
	if s.Config.HAP.Limit != nil {
		limit = s.Config.HAP.Limit(provider)
	}
	var acc hyperscaler.Account
	err := s.Store.LockAccounts(ctx, tenant, func(ctx context.Context, tx storage.AccountTx) error {
		names, err := s.Accounts.TenantAccounts(ctx, pool, tenant)
		if err != nil {
			return err
		}
		counts, err := tx.InstancesPerAccount(ctx, names, op.InstanceID)
		if err != nil {
			return err
		}
		best, bestN := "", -1
		for _, n := range names {
			if c := counts[n]; (limit == 0 || c < limit) && c > bestN {
				best, bestN = n, c
			}
		}
		if best == "" {
			claimed, err := s.Accounts.ClaimNew(ctx, pool, tenant)
			if err != nil {
				return err
			}
			best = claimed.Name
		}
		acc = hyperscaler.Account{Name: best}
		return tx.SetInstanceAccount(ctx, op.InstanceID, best, pool.EUAccess)
	})
	if err != nil {
		return hyperscaler.Account{}, fmt.Errorf("choosing an account (%s) of multi-account global account %s: %w", pool, tenant, err)
	}
	return acc, nil
}
