package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// BindingState is where a service binding stands; its values are OSB's
// last_operation states, so a binding's last_operation needs no mapping.
type BindingState string

// Binding states.
const (
	BindingInProgress BindingState = BindingState(OperationInProgress)
	BindingSucceeded  BindingState = BindingState(OperationSucceeded)
	BindingFailed     BindingState = BindingState(OperationFailed)
)

// Binding is an OSB service binding of an instance: a ServiceAccount in the
// runtime whose token is handed out in a kubeconfig.
type Binding struct {
	BindingID  string          `db:"binding_id"`
	InstanceID string          `db:"instance_id"`
	RuntimeID  string          `db:"runtime_id"`
	PlanID     string          `db:"plan_id"`
	Parameters json.RawMessage `db:"parameters"`
	State      BindingState    `db:"state"`
	// Description says, for last_operation, what the bind is doing or why it failed.
	Description    string `db:"description"`
	OperationID    string `db:"operation_id"`
	ServiceAccount string `db:"service_account"`
	// Kubeconfig is the plaintext kubeconfig; sealed on the way into the
	// database, opened on the way out (Binding only); nil until succeeded.
	Kubeconfig []byte    `db:"-"`
	ExpiresAt  time.Time `db:"expires_at"`
	Deadline   time.Time `db:"deadline"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
}

// Live reports whether the binding counts against its instance's limit at
// now: being created, or created and not expired.
func (b Binding) Live(now time.Time) bool {
	return b.State == BindingInProgress || (b.State == BindingSucceeded && b.ExpiresAt.After(now))
}

const bindingColumns = `binding_id, instance_id, runtime_id, plan_id, parameters, state, description,
	operation_id, service_account, expires_at, deadline, created_at, updated_at`

// bindingRow is a Binding as stored, with the kubeconfig still sealed.
type bindingRow struct {
	Binding
	EncryptedKubeconfig *string `db:"encrypted_kubeconfig"`
}

// bindingBound is the additional data a binding's kubeconfig is sealed
// with: a sealed value copied onto another binding's row does not open.
func bindingBound(bindingID string) string { return "binding/" + bindingID }

// PutBinding decides on a PUT of a binding inside one transaction, with the
// instance row locked (so binds of one instance, and a DELETE of the
// instance, are serialised): decide gets the instance, the binding already
// stored under that ID (nil if none) and the instance's bindings live at
// now, and returns the row to write (nil: nothing to write) or an error,
// which is returned as it is and leaves nothing written. It returns
// ErrNotFound when the instance does not exist and ErrAlreadyExists when a
// binding of that ID was written for another instance meanwhile.
//
// A connection lost on the way (a failover) runs the transaction again
// (retryLost), decide included: if the first run committed, decide finds
// the row it wrote as the existing one, and must tell it by its operation
// ID from another PUT's.
func (s *Store) PutBinding(ctx context.Context, instanceID, bindingID string, now time.Time,
	decide func(inst Instance, existing *Binding, live int) (*Binding, error)) error {
	return retryLost(ctx, func() error { return s.putBinding(ctx, instanceID, bindingID, now, decide) })
}

func (s *Store) putBinding(ctx context.Context, instanceID, bindingID string, now time.Time,
	decide func(inst Instance, existing *Binding, live int) (*Binding, error)) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		inst, err := s.lockInstance(ctx, tx, instanceID)
		if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `SELECT `+bindingColumns+` FROM bindings WHERE binding_id = $1`, bindingID)
		found, err := pgx.CollectRows(rows, pgx.RowToStructByName[Binding])
		if err != nil {
			return fmt.Errorf("reading binding %s: %w", bindingID, err)
		}
		var existing *Binding
		if len(found) == 1 {
			existing = &found[0]
		}
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM bindings WHERE instance_id = $1
			AND (state = $2 OR (state = $3 AND expires_at > $4))`,
			instanceID, BindingInProgress, BindingSucceeded, now).Scan(&live); err != nil {
			return fmt.Errorf("counting live bindings of instance %s: %w", instanceID, err)
		}
		b, err := decide(inst, existing, live)
		if err != nil || b == nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO bindings (binding_id, instance_id, runtime_id, plan_id, parameters,
			state, description, operation_id, service_account, expires_at, deadline)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			b.BindingID, b.InstanceID, b.RuntimeID, b.PlanID, jsonOrEmpty(b.Parameters), b.State, b.Description,
			b.OperationID, b.ServiceAccount, b.ExpiresAt, b.Deadline)
		if isUniqueViolation(err) {
			// The same binding ID written meanwhile for another instance
			// (binds of one instance are serialised by the lock above).
			return ErrAlreadyExists
		}
		if err != nil {
			return fmt.Errorf("writing binding %s: %w", b.BindingID, err)
		}
		return nil
	})
}

// CompleteBinding records a finished bind: the kubeconfig (sealed) and its
// expiry. It returns false, writing nothing, when the bind is no longer in
// progress under operationID (unbound, or its instance deprovisioned,
// meanwhile): the caller then removes what it created. A connection lost
// on the way runs the update again, and the caller may call it again once
// the database is back: a run that finds the binding already succeeded
// under operationID finds its own earlier run's commit (only the bind that
// created an operation ID completes it), and reports true as well.
func (s *Store) CompleteBinding(ctx context.Context, bindingID, operationID string, kubeconfig []byte, expiresAt time.Time) (bool, error) {
	sealed, err := s.cipher.Seal(kubeconfig, bindingBound(bindingID))
	if err != nil {
		return false, fmt.Errorf("sealing the kubeconfig of binding %s: %w", bindingID, err)
	}
	var tag pgconn.CommandTag
	err = retryLost(ctx, func() (err error) {
		tag, err = s.pool.Exec(ctx, `UPDATE bindings SET state = $3, description = $4, encrypted_kubeconfig = $5,
			expires_at = $6, updated_at = now() WHERE binding_id = $1 AND operation_id = $2 AND state IN ($7, $3)`,
			bindingID, operationID, BindingSucceeded, "the binding is ready", sealed, expiresAt, BindingInProgress)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("completing binding %s: %w", bindingID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// FailBinding records why a bind under operationID failed; a binding no
// longer in progress under it is left alone.
func (s *Store) FailBinding(ctx context.Context, bindingID, operationID, description string) error {
	err := retryLost(ctx, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE bindings SET state = $3, description = $4, updated_at = now()
			WHERE binding_id = $1 AND operation_id = $2 AND state = $5`,
			bindingID, operationID, BindingFailed, description, BindingInProgress)
		return err
	})
	if err != nil {
		return fmt.Errorf("failing binding %s: %w", bindingID, err)
	}
	return nil
}

// Binding returns a binding with its kubeconfig opened; ErrNotFound when
// there is none.
func (s *Store) Binding(ctx context.Context, bindingID string) (Binding, error) {
	var row bindingRow
	err := retryLost(ctx, func() (err error) {
		rows, _ := s.pool.Query(ctx, `SELECT `+bindingColumns+`, encrypted_kubeconfig FROM bindings WHERE binding_id = $1`, bindingID)
		row, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[bindingRow])
		return err
	})
	if err != nil {
		return Binding{}, interpretError(err)
	}
	b := row.Binding
	if row.EncryptedKubeconfig != nil {
		plain, err := s.cipher.Open(*row.EncryptedKubeconfig, bindingBound(bindingID))
		if err != nil {
			return Binding{}, fmt.Errorf("opening the kubeconfig of binding %s: %w", bindingID, err)
		}
		b.Kubeconfig = plain
	}
	return b, nil
}

// DeleteBinding removes a binding's row if it is still the bind under
// operationID (a PUT may have replaced an expired or failed one meanwhile);
// it reports whether it removed one (a re-run after a lost connection
// whose first run committed reports false).
func (s *Store) DeleteBinding(ctx context.Context, bindingID, operationID string) (bool, error) {
	var tag pgconn.CommandTag
	err := retryLost(ctx, func() (err error) {
		tag, err = s.pool.Exec(ctx, `DELETE FROM bindings WHERE binding_id = $1 AND operation_id = $2`, bindingID, operationID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("deleting binding %s: %w", bindingID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// InstanceBindings lists an instance's bindings, oldest first, kubeconfigs
// left sealed (not read).
func (s *Store) InstanceBindings(ctx context.Context, instanceID string) ([]Binding, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+bindingColumns+` FROM bindings WHERE instance_id = $1
		ORDER BY created_at, binding_id`, instanceID)
	bs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Binding])
	if err != nil {
		return nil, fmt.Errorf("reading bindings of instance %s: %w", instanceID, err)
	}
	return bs, nil
}

// DueBindings lists up to limit bindings the prune job acts on at now:
// succeeded ones past their expiry and in-progress ones past their deadline
// (their replica died mid-bind), oldest first, kubeconfigs not read.
func (s *Store) DueBindings(ctx context.Context, now time.Time, limit int) ([]Binding, error) {
	if limit <= 0 {
		return nil, errors.New("DueBindings: limit must be positive")
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+bindingColumns+` FROM bindings
		WHERE (state = $2 AND expires_at <= $1) OR (state = $3 AND deadline <= $1)
		ORDER BY expires_at, binding_id LIMIT $4`, now, BindingSucceeded, BindingInProgress, limit)
	bs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Binding])
	if err != nil {
		return nil, fmt.Errorf("reading due bindings: %w", err)
	}
	return bs, nil
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
