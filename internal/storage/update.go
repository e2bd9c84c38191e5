package storage

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Updated is what a successful update of a runtime's plan or parameters
// produced: the instance's new plan, parameters and resolved values.
type Updated struct {
	PlanID, PlanName         string
	Provider, ProviderRegion string
	// Parameters are the instance's parameters after the update.
	Parameters json.RawMessage
	// ResolvedParameters are the values the runtime now runs with.
	ResolvedParameters json.RawMessage
	// OnePerGlobalAccountPlan is the new plan's name when the plan has
	// plans.yaml's onePerGlobalAccount, nil otherwise (see Instance); it is
	// written only when the plan changes.
	OnePerGlobalAccountPlan *string
	// Kyma is the runtime's Kyma record after the update (a plan change
	// changes the component list).
	Kyma KymaRecord
	// Action, when not nil, is added to the instance's history.
	Action *Action
}

// SetUpdated records a successful update in one transaction: the instance's
// plan, parameters and resolved values, and the history entry. Run twice for
// one operation, it writes the same values and one history entry.
func (s *Store) SetUpdated(ctx context.Context, instanceID string, u Updated) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE instances SET plan_id = $2, plan_name = $3, provider = $4,
				provider_region = $5, parameters = $6, resolved_parameters = $7,
				one_per_global_account_plan = CASE WHEN plan_id = $2 THEN one_per_global_account_plan ELSE $8 END,
				kyma_version = $9, kyma_components = $10, kyma_overrides_secret = $11,
				updated_at = now()
			WHERE instance_id = $1`,
			instanceID, u.PlanID, u.PlanName, u.Provider, u.ProviderRegion, jsonOrEmpty(u.Parameters), jsonOrEmpty(u.ResolvedParameters),
			u.OnePerGlobalAccountPlan, u.Kyma.KymaVersion, nonNil(u.Kyma.KymaComponents), u.Kyma.OverridesSecret)
		if err != nil {
			return fmt.Errorf("recording update of instance %s: %w", instanceID, interpretError(err))
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("recording update of instance %s: %w", instanceID, ErrNotFound)
		}
		if u.Action == nil {
			return nil
		}
		a := u.Action
		if _, err := tx.Exec(ctx, `INSERT INTO instance_actions (instance_id, operation_id, type, message, old_value, new_value)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (operation_id) DO NOTHING`,
			instanceID, a.OperationID, a.Type, a.Message, a.OldValue, a.NewValue); err != nil {
			return fmt.Errorf("recording action of instance %s: %w", instanceID, err)
		}
		return nil
	})
}

// Actions returns the history of each of the instances, oldest first; an
// instance without any is not in the map.
func (s *Store) Actions(ctx context.Context, instanceIDs ...string) (map[string][]Action, error) {
	out := map[string][]Action{}
	if len(instanceIDs) == 0 {
		return out, nil
	}
	rows, _ := s.pool.Query(ctx, `SELECT action_id, instance_id, operation_id, type, message, old_value, new_value, created_at
		FROM instance_actions WHERE instance_id = ANY($1) ORDER BY instance_id, created_at, action_id`, instanceIDs)
	actions, err := pgx.CollectRows(rows, pgx.RowToStructByName[Action])
	if err != nil {
		return nil, fmt.Errorf("reading actions: %w", interpretError(err))
	}
	for _, a := range actions {
		out[a.InstanceID] = append(out[a.InstanceID], a)
	}
	return out, nil
}
