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
		rows, _ := tx.Query(ctx, `SELECT `+instanceColumns+` FROM instances WHERE instance_id = $1 FOR UPDATE`, instanceID)
		row, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[instanceRow])
		if err != nil {
			return interpretError(err)
		}
		inst, err := s.open(row)
		if err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `SELECT `+operationColumns+` FROM operations WHERE instance_id = $1 AND state = $2`,
			instanceID, StateInProgress)
		active, err := pgx.CollectRows(rows, pgx.RowToStructByName[Operation])
		if err != nil {
			return fmt.Errorf("reading running operation: %w", err)
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

func (s *Store) applyChange(ctx context.Context, tx pgx.Tx, inst Instance, c InstanceChange) error {
	if c.Context != nil {
		if _, err := tx.Exec(ctx, `UPDATE instances SET context = $2, updated_at = now() WHERE instance_id = $1`,
			inst.InstanceID, jsonOrEmpty(c.Context)); err != nil {
			return fmt.Errorf("storing context: %w", err)
		}
	}
	if c.Credentials != nil {
		sealed, err := s.cipher.Seal(c.Credentials, inst.InstanceID)
		if err != nil {
			return fmt.Errorf("sealing credentials: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE instances SET encrypted_credentials = $2, updated_at = now() WHERE instance_id = $1`,
			inst.InstanceID, sealed); err != nil {
			return fmt.Errorf("storing credentials: %w", err)
		}
	}
	if c.ExpiredAt != nil {
		if _, err := tx.Exec(ctx, `UPDATE instances SET expired_at = $2, updated_at = now() WHERE instance_id = $1`,
			inst.InstanceID, *c.ExpiredAt); err != nil {
			return fmt.Errorf("storing expiry: %w", err)
		}
	}
	op := c.Operation
	if op == nil {
		return nil
	}
	if op.InstanceID != inst.InstanceID {
		return fmt.Errorf("operation %s is for instance %s, not %s", op.ID, op.InstanceID, inst.InstanceID)
	}
	switch op.Type {
	case OperationTypeProvision:
		// A resumed instance gets a new runtime (and shoot), so nothing
		// cached about the old one applies; the cluster ID stays, so BTP
		// Manager's view of the cluster is continuous.
		if _, err := tx.Exec(ctx, `UPDATE instances SET state = $2, runtime_id = '', shoot_name = '',
			dashboard_url = '', updated_at = now() WHERE instance_id = $1`, inst.InstanceID, RuntimeProvisioning); err != nil {
			return fmt.Errorf("resuming instance: %w", err)
		}
	case OperationTypeDeprovision:
		if _, err := tx.Exec(ctx, `UPDATE instances SET state = $2, updated_at = now() WHERE instance_id = $1`,
			inst.InstanceID, RuntimeDeprovisioning); err != nil {
			return fmt.Errorf("marking instance deprovisioning: %w", err)
		}
	}
	return s.insertOperation(ctx, tx, *op)
}

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
		ORDER BY i.created_at, i.instance_id LIMIT $3`, plans, createdBefore, limit, StateInProgress)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing instances to expire: %w", err)
	}
	return ids, nil
}
