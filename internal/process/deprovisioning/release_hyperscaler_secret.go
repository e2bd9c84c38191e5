package deprovisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// tenantCounter counts the instances still holding an account.
type tenantCounter interface {
	// LockAccounts runs fn holding the global account's account lock, which provisionings take
	// for their claim: the release's count of the instances that stay and its dirty mark happen
	// in it (storage.LockAccounts).
	LockAccounts(ctx context.Context, globalAccount string, fn func(ctx context.Context, tx storage.AccountTx) error) error
	// InstanceAccount is the binding recorded on the instance (its latest claim: an update that
	// moved the runtime to another plan's pool recorded the new one).
	InstanceAccount(ctx context.Context, instanceID string) (string, bool, error)
}

// accountReleaser marks a tenant's dedicated account for cleanup, once no cluster uses it.
type accountReleaser interface {
	Account(ctx context.Context, name string) (hyperscaler.AccountInfo, error)
	ShootExists(ctx context.Context, name string) (bool, error)
	ShootsUsing(ctx context.Context, binding string) ([]string, error)
	MarkDirtyByName(ctx context.Context, name, tenant string) error
	MarkDirty(ctx context.Context, pool hyperscaler.Pool, tenant string) error
}

// ReleaseHyperscalerSecret gives back a dedicated hyperscaler account (binding) on every
// deprovisioning, suspension included, as upstream does, but never from under a cluster: shared,
// internal and already dirty accounts are skipped; while the instance's own Shoot still exists
// the step waits (at most ShootWait); and the account is labelled dirty only when no Shoot of
// the project references it any more and no other instance of keb's that stays is recorded on it
// (a suspended one's runtime comes back to it; one being deprovisioned releases it on its own way
// out, so that of several deprovisioned at once the last one out releases). The count and the
// mark happen under the global account's account lock, which a provisioning's claim holds until
// its instance records the account: a release never marks an account a claim just handed out.
type ReleaseHyperscalerSecret struct {
	Store    tenantCounter
	Accounts accountReleaser
	// SharedPlanIDs are plans on shared accounts: their instances never
	// keep a tenant's dedicated account.
	SharedPlanIDs []string
	Config        Config
}

// SkipAfter implements process.SkippableStep.
func (s *ReleaseHyperscalerSecret) SkipAfter() time.Duration { return s.Config.SkipAfter }

// Leftover implements process.SkippableStep.
func (s *ReleaseHyperscalerSecret) Leftover(op *process.Operation) string {
	return fmt.Sprintf("the hyperscaler account of global account %s, not released for cleanup", op.Instance.PoolTenant())
}

// Name implements process.Step.
func (s *ReleaseHyperscalerSecret) Name() string { return "release_hyperscaler_secret" }

// Run implements process.Step.
func (s *ReleaseHyperscalerSecret) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if slices.Contains(s.SharedPlanIDs, op.Instance.PlanID) {
		return process.Done()
	}
	binding, eu, err := s.Store.InstanceAccount(ctx, op.InstanceID)
	if err != nil {
		return process.StepResult{}, err
	}
	if binding == "" {
		// Recorded by a keb before instances kept their account: the provisioning's record.
		if op.Record.HyperscalerShared {
			return process.Done()
		}
		binding = op.Record.HyperscalerSecret
	} else {
		op.Record.HyperscalerSecret, op.Record.HyperscalerEUAccess = binding, eu
	}
	if op.Instance.ShootName != "" {
		exists, err := s.Accounts.ShootExists(ctx, op.Instance.ShootName)
		if err != nil {
			return process.StepResult{}, err
		}
		if exists {
			if started, ok := op.Record.StepStartedAt[s.Name()]; !ok || time.Since(started) < s.Config.ShootWait {
				op.Describe("Waiting for Shoot %s to be deleted before releasing its hyperscaler account", op.Instance.ShootName)
				return process.RetryAfter(s.Config.RemovalPoll)
			}
			op.Describe("Keeping the hyperscaler account: Shoot %s still exists after %s", op.Instance.ShootName, s.Config.ShootWait)
			return process.Done()
		}
	}
	if binding == "" {
		return s.releaseUnrecorded(ctx, op)
	}
	op.Describe("Releasing the hyperscaler account %s", binding)
	var kept []string
	err = s.Store.LockAccounts(ctx, op.Instance.PoolTenant(), func(ctx context.Context, tx storage.AccountTx) error {
		others, err := tx.OtherInstancesOnAccount(ctx, binding, op.InstanceID)
		if err != nil || others > 0 {
			return err // still the account of the tenant's other runtimes
		}
		if kept, err = s.Accounts.ShootsUsing(ctx, binding); err != nil || len(kept) > 0 {
			return err
		}
		// MarkDirtyByName leaves shared, internal, dirty and other tenants' accounts alone (a
		// shared account is never labelled with a tenant).
		if err := s.Accounts.MarkDirtyByName(ctx, binding, op.Instance.PoolTenant()); err != nil {
			return fmt.Errorf("releasing hyperscaler account %s: %w", binding, err)
		}
		return nil
	})
	if err != nil {
		return process.StepResult{}, err
	}
	if len(kept) > 0 {
		op.Describe("Keeping the hyperscaler account %s: Shoots %s use it", binding, strings.Join(kept, ", "))
	}
	return process.Done()
}

// releaseUnrecorded releases the account of a provisioning halted between its claim and its
// checkpoint (the claim is known by the tenant's label only): the tenant's account of the
// provider's plain pool, when no other instance of the tenant's runs on the provider.
func (s *ReleaseHyperscalerSecret) releaseUnrecorded(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	hsType := op.Record.HyperscalerType
	if hsType == "" {
		t, err := hyperscaler.HyperscalerType(op.Record.Provider)
		if err != nil {
			return process.Done() // no pool serves this provider: nothing was claimed
		}
		hsType = t
	}
	tenant := op.Instance.PoolTenant()
	err := s.Store.LockAccounts(ctx, tenant, func(ctx context.Context, tx storage.AccountTx) error {
		others, err := tx.OtherInstancesOfTenant(ctx, tenant, op.Record.Provider, op.InstanceID, s.SharedPlanIDs)
		if err != nil || others > 0 {
			return err
		}
		pool := hyperscaler.Pool{Type: hsType, EUAccess: op.Record.HyperscalerEUAccess}
		if err := s.Accounts.MarkDirty(ctx, pool, tenant); err != nil {
			return fmt.Errorf("releasing hyperscaler account: %w", err)
		}
		return nil
	})
	if err != nil {
		return process.StepResult{}, err
	}
	return process.Done()
}
