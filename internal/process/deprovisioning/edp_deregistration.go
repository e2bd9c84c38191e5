package deprovisioning

import (
	"context"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// edpDeregistrar removes data tenants from EDP (*edp.Client is one).
type edpDeregistrar interface {
	DeleteMetadata(ctx context.Context, name, key string) error
	DeleteDataTenant(ctx context.Context, name string) error
}

// subaccountInstances lists a subaccount's live instances with their
// running operation (*storage.Store is one).
type subaccountInstances interface {
	InstancesOfSubaccounts(ctx context.Context, subaccountIDs []string) ([]storage.CleanupInstance, error)
}

// EDPDeregistration removes the subaccount's EDP data tenant (its four
// metadata entries, then the tenant; what is gone already is fine) once no
// other runtime of the subaccount stays, as upstream's EDP_Deregistration:
// another instance that is neither suspended nor being deprovisioned keeps
// the tenant. It never fails a deprovisioning: EDP's trouble is retried for
// 30 minutes (a refusal not at all), then the step is skipped and the
// tenant listed as left behind. A suspension runs it too; the
// unsuspension registers the subaccount again.
type EDPDeregistration struct {
	EDP       edpDeregistrar
	Instances subaccountInstances
}

// Name implements process.Step.
func (s *EDPDeregistration) Name() string { return "edp_deregistration" }

// Remote implements process.RemoteStep.
func (s *EDPDeregistration) Remote() string { return "EDP" }

// SkipAfter implements process.SkippableStep.
func (s *EDPDeregistration) SkipAfter() time.Duration { return 30 * time.Minute }

// Leftover implements process.SkippableStep.
func (s *EDPDeregistration) Leftover(op *process.Operation) string {
	return "the EDP data tenant " + edp.TenantName(op.Instance.SubAccountID)
}

// Run implements process.Step.
func (s *EDPDeregistration) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	name := edp.TenantName(op.Instance.SubAccountID)
	needed, err := tenantNeeded(ctx, s.Instances, op.Instance.SubAccountID, op.InstanceID)
	if err != nil || needed {
		return process.StepResult{}, err // needed: the subaccount's other runtime still uses it
	}
	op.Describe("Removing subaccount %s from EDP", name)
	if err := removeTenant(ctx, s.EDP, name); err != nil {
		return edpFailure("removing the EDP data tenant", err)
	}
	return process.Done()
}

// tenantNeeded reports whether another runtime of the subaccount lives: an
// instance other than except that is neither suspended nor being
// deprovisioned.
func tenantNeeded(ctx context.Context, instances subaccountInstances, subaccountID, except string) (bool, error) {
	others, err := instances.InstancesOfSubaccounts(ctx, []string{subaccountID})
	if err != nil {
		return false, err
	}
	for _, o := range others {
		if o.InstanceID != except && o.Running != storage.OperationTypeDeprovision && o.State != string(storage.RuntimeSuspended) {
			return true, nil
		}
	}
	return false, nil
}

// removeTenant deletes the tenant's four entries, then the tenant.
func removeTenant(ctx context.Context, c edpDeregistrar, name string) error {
	for _, key := range edp.Keys {
		if err := c.DeleteMetadata(ctx, name, key); err != nil {
			return fmt.Errorf("metadata %s: %w", key, err)
		}
	}
	return c.DeleteDataTenant(ctx, name)
}

// retryEDP removes the data tenant a skipped deregistration left, unless a
// runtime of its subaccount lives again; gone is true once it is removed
// or in use again (then it is no leftover).
func retryEDP(ctx context.Context, c edpDeregistrar, instances subaccountInstances, a storage.ArchivedInstance) (gone bool, err error) {
	needed, err := tenantNeeded(ctx, instances, a.SubAccountID, a.InstanceID)
	if err != nil || needed {
		return needed, err
	}
	if err := removeTenant(ctx, c, edp.TenantName(a.SubAccountID)); err != nil {
		return false, err
	}
	return true, nil
}

// edpFailure retries what may heal, and skips the step at once on a
// refusal.
func edpFailure(doing string, err error) (process.StepResult, error) {
	if edp.Temporary(err) {
		return process.StepResult{}, fmt.Errorf("%s: %w", doing, err)
	}
	return process.Fail("EDP refused %s: %v", doing, err)
}
