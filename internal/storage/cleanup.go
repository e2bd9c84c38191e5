package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Watermark is where a cleanup job reading an event feed stopped: the action
// time of the last event it handled, and the IDs of the events it handled at
// exactly that time (a feed may hold several events of one millisecond).
type Watermark struct {
	ActionTime time.Time
	EventIDs   []string
}

// Watermark returns the named watermark; the zero Watermark when the job
// never stored one.
func (s *Store) Watermark(ctx context.Context, name string) (Watermark, error) {
	var w Watermark
	err := s.pool.QueryRow(ctx, `SELECT action_time, event_ids FROM cleanup_watermarks WHERE name = $1`, name).
		Scan(&w.ActionTime, &w.EventIDs)
	if errors.Is(err, pgx.ErrNoRows) {
		return Watermark{}, nil
	}
	if err != nil {
		return Watermark{}, fmt.Errorf("reading watermark %s: %w", name, err)
	}
	return w, nil
}

// SaveWatermark stores the named watermark.
func (s *Store) SaveWatermark(ctx context.Context, name string, w Watermark) error {
	ids := w.EventIDs
	if ids == nil {
		ids = []string{}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO cleanup_watermarks (name, action_time, event_ids) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET action_time = $2, event_ids = $3, updated_at = now()`, name, w.ActionTime, ids)
	if err != nil {
		return fmt.Errorf("saving watermark %s: %w", name, err)
	}
	return nil
}

// CleanupInstance is a live instance as the cleanup jobs see it.
type CleanupInstance struct {
	InstanceID   string `db:"instance_id"`
	RuntimeID    string `db:"runtime_id"`
	SubAccountID string `db:"subaccount_id"`
	State        string `db:"state"`
	// Running is the type of the operation in progress; empty when none.
	Running OperationType `db:"running"`
	// RunningTemporary marks a running deprovisioning that suspends.
	RunningTemporary bool `db:"running_temporary"`
	// RunningID is the ID of the operation in progress.
	RunningID string `db:"running_id"`
}

// Deprovisioning reports whether a (non-suspending) deprovisioning of the
// instance is already in progress.
func (c CleanupInstance) Deprovisioning() bool {
	return c.Running == OperationTypeDeprovision && !c.RunningTemporary
}

const cleanupInstanceSelect = `SELECT i.instance_id, i.runtime_id, i.subaccount_id, i.state,
		coalesce(o.type, '') AS running, coalesce(o.temporary, false) AS running_temporary,
		coalesce(o.operation_id, '') AS running_id
	FROM instances i
	LEFT JOIN operations o ON o.instance_id = i.instance_id AND o.state = 'in progress' `

// InstancesOfSubaccounts returns the live instances of the subaccounts, with
// their running operation, in one statement whatever the number of IDs.
func (s *Store) InstancesOfSubaccounts(ctx context.Context, subaccountIDs []string) ([]CleanupInstance, error) {
	rows, _ := s.pool.Query(ctx, cleanupInstanceSelect+`WHERE i.subaccount_id = ANY($1::text[])
		ORDER BY i.subaccount_id, i.instance_id`, subaccountIDs)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[CleanupInstance])
	if err != nil {
		return nil, fmt.Errorf("finding instances of %d subaccounts: %w", len(subaccountIDs), err)
	}
	return out, nil
}

// InstancesOfRuntimes returns the live instances running one of the
// runtimes or having one of the instance IDs (the label a Runtime CR carries),
// with their running operation, in one statement.
func (s *Store) InstancesOfRuntimes(ctx context.Context, runtimeIDs, instanceIDs []string) ([]CleanupInstance, error) {
	rows, _ := s.pool.Query(ctx, cleanupInstanceSelect+`WHERE ((i.runtime_id = ANY($1::text[]) AND i.runtime_id <> '')
			OR i.instance_id = ANY($2::text[]))
		ORDER BY i.instance_id`, runtimeIDs, instanceIDs)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[CleanupInstance])
	if err != nil {
		return nil, fmt.Errorf("finding instances of %d runtimes: %w", len(runtimeIDs), err)
	}
	return out, nil
}

// InstancesOfSubaccountPlan counts the live instances of a subaccount on a
// plan other than exceptInstanceID, for the entitlement quota.
func (s *Store) InstancesOfSubaccountPlan(ctx context.Context, subaccountID, planID, exceptInstanceID string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM instances WHERE subaccount_id = $1 AND plan_id = $2
		AND instance_id <> $3`, subaccountID, planID, exceptInstanceID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting instances of subaccount %s: %w", subaccountID, err)
	}
	return n, nil
}
