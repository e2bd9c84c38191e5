package update

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// recordUpdate is the update pipeline's success hook: only now, with the
// change applied, the instance takes the new plan, parameters and resolved
// values, and a plan change enters its history.
func recordUpdate(store updatedStore, cat *catalog.Catalog) func(ctx context.Context, op *process.Operation) error {
	return func(ctx context.Context, op *process.Operation) error {
		if !op.Request.ChangesRuntime() {
			return nil
		}
		after, params, err := planned(op)
		if err != nil {
			return err
		}
		// The maintenance window stays the one resolved at provisioning
		// (the instance's columns keep it too).
		var before provisioning.ResolvedParameters
		if len(op.Instance.ResolvedParameters) > 0 {
			if err := json.Unmarshal(op.Instance.ResolvedParameters, &before); err != nil {
				return fmt.Errorf("decoding the recorded resolved parameters: %w", err)
			}
		}
		resolved, err := provisioning.ResolvedJSON(after, params, before.MaintenanceWindowBegin, before.MaintenanceWindowEnd)
		if err != nil {
			return err
		}
		u := storage.Updated{PlanID: after.Instance.PlanID, PlanName: after.Instance.PlanName,
			Provider: op.Record.Provider, ProviderRegion: op.Record.ProviderRegion,
			Parameters: op.Request.Parameters, ResolvedParameters: resolved, Kyma: provisioning.KymaRecord(op)}
		// The one-per-global-account rule follows the plan: a trial upgraded
		// to a paid plan no longer counts as the account's trial.
		if plan, ok := cat.PlanByID(after.Instance.PlanID); ok && plan.OnePerGlobalAccount {
			u.OnePerGlobalAccountPlan = &after.Instance.PlanName
		}
		if after.Instance.PlanID != op.Instance.PlanID {
			u.Action = &storage.Action{OperationID: op.ID, Type: storage.ActionPlanUpdate,
				Message:  fmt.Sprintf("plan changed from %s to %s", op.Instance.PlanName, after.Instance.PlanName),
				OldValue: op.Instance.PlanName, NewValue: after.Instance.PlanName}
		}
		return store.SetUpdated(ctx, op.InstanceID, u)
	}
}
