package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstanceChange is what a change of a live instance writes: any of new
// context, new credentials, an expiry time, and an operation to run.
type InstanceChange struct {
	// Context replaces the stored context (without credentials); nil keeps it.
	Context json.RawMessage
	// Credentials replace the stored sm_operator_credentials; nil keeps them.
	Credentials []byte
	// ExpiredAt marks the instance expired; nil keeps the current value.
	ExpiredAt *time.Time
	// GlobalAccountID moves the instance's subaccount to that global
	// account, keeping the first one as SubscriptionGlobalAccountID; ""
	// keeps it.
	GlobalAccountID string
	// Action is recorded in the instance's history with the change; nil
	// records none.
	Action *Action
	// Operation is queued with the change. A provisioning resumes a
	// suspended instance (it gets a new runtime ID, keeps its cluster ID); a
	// temporary deprovisioning suspends it; an update changes the running
	// runtime. Nil runs nothing.
	Operation *Operation
}

// ChangeInstance changes a live instance in one transaction. decide sees the
// instance (locked against concurrent changes, credentials opened) and its
// running operation (nil when none), and returns what to write (the zero
// InstanceChange writes nothing) or an error, which ChangeInstance returns
// as it is, having written nothing. It returns ErrNotFound for an unknown
// instance.
func (s *Store) ChangeInstance(ctx context.Context, instanceID string, decide func(inst Instance, running *Operation) (InstanceChange, error)) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		inst, err := s.lockInstance(ctx, tx, instanceID)
		if err != nil {
			return err
		}
		active, err := runningOperations(ctx, tx, instanceID)
		if err != nil {
			return err
		}
		var running *Operation
		if len(active) > 0 {
			running = &active[0]
		}
		change, err := decide(inst, running)
		if err != nil {
			return err
		}
		return s.applyChange(ctx, tx, inst, change)
	})
}

// lockInstance reads the instance (credentials opened) and locks its row
// until tx ends; ErrNotFound when there is none.
func (s *Store) lockInstance(ctx context.Context, tx pgx.Tx, instanceID string) (Instance, error) {
	rows, _ := tx.Query(ctx, `SELECT `+instanceColumns+` FROM instances WHERE instance_id = $1 FOR UPDATE`, instanceID)
	row, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[instanceRow])
	if err != nil {
		return Instance{}, interpretError(err)
	}
	return s.open(row)
}

// applyChange writes c in one UPDATE of the instance (a nil field keeps its
// column) and queues c's operation.
func (s *Store) applyChange(ctx context.Context, tx pgx.Tx, inst Instance, c InstanceChange) error {
	var sealed *string
	if c.Credentials != nil {
		v, err := s.cipher.Seal(c.Credentials, inst.InstanceID)
		if err != nil {
			return fmt.Errorf("sealing credentials: %w", err)
		}
		sealed = &v
	}
	var contextJSON []byte
	if c.Context != nil {
		contextJSON = jsonOrEmpty(c.Context)
	}
	op := c.Operation
	var state *RuntimeState
	resume := false
	if op != nil {
		if op.InstanceID != inst.InstanceID {
			return fmt.Errorf("operation %s is for instance %s, not %s", op.ID, op.InstanceID, inst.InstanceID)
		}
		switch op.Type {
		case OperationTypeProvision:
			// A resumed instance gets a new runtime (and shoot), so nothing
			// cached about the old one applies; the cluster ID stays, so BTP
			// Manager's view of the cluster is continuous.
			state, resume = ptr(RuntimeProvisioning), true
		case OperationTypeDeprovision:
			state = ptr(RuntimeDeprovisioning)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE instances SET
			context = coalesce($2, context),
			encrypted_credentials = coalesce($3, encrypted_credentials),
			expired_at = coalesce($4, expired_at),
			state = coalesce($5, state),
			runtime_id = CASE WHEN $6 THEN '' ELSE runtime_id END,
			shoot_name = CASE WHEN $6 THEN '' ELSE shoot_name END,
			dashboard_url = CASE WHEN $6 THEN '' ELSE dashboard_url END,
			kyma_state = CASE WHEN $6 THEN NULL ELSE kyma_state END,
			kyma_modules = CASE WHEN $6 THEN NULL ELSE kyma_modules END,
			kyma_state_version = CASE WHEN $6 THEN NULL ELSE kyma_state_version END,
			subscription_global_account_id = CASE WHEN $7 <> '' AND subscription_global_account_id = ''
				THEN global_account_id ELSE subscription_global_account_id END,
			global_account_id = CASE WHEN $7 <> '' THEN $7 ELSE global_account_id END,
			updated_at = now()
		WHERE instance_id = $1`, inst.InstanceID, contextJSON, sealed, c.ExpiredAt, state, resume, c.GlobalAccountID); err != nil {
		return fmt.Errorf("changing instance %s: %w", inst.InstanceID, interpretError(err))
	}
	if a := c.Action; a != nil {
		if _, err := tx.Exec(ctx, `INSERT INTO instance_actions (instance_id, operation_id, type, message, old_value, new_value)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (operation_id) DO NOTHING`,
			inst.InstanceID, a.OperationID, a.Type, a.Message, a.OldValue, a.NewValue); err != nil {
			return fmt.Errorf("recording action of instance %s: %w", inst.InstanceID, err)
		}
	}
	if op == nil {
		return nil
	}
	return s.insertOperation(ctx, tx, *op)
}

func ptr[T any](v T) *T { return &v }

// ExpiryCandidates lists up to limit instances of the plans, oldest first,
// that are due: created before createdBefore and not expired yet, or expired
// but not suspended (their suspension failed, so it is tried again).
// Instances with a running operation are left out, so that they cannot fill
// every batch and starve the others.
func (s *Store) ExpiryCandidates(ctx context.Context, plans []string, createdBefore time.Time, limit int) ([]string, error) {
	rows, _ := s.pool.Query(ctx, `SELECT i.instance_id FROM instances i
		WHERE i.plan_name = ANY($1::text[]) AND i.created_at < $2
			AND (i.expired_at IS NULL OR i.state = 'failed')
			AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.instance_id = i.instance_id AND o.state = $4)
		ORDER BY i.created_at, i.instance_id LIMIT $3`, plans, createdBefore, limit, OperationInProgress)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing instances to expire: %w", err)
	}
	return ids, nil
}
