package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// EventFilter selects the operations GET /events reads. Each non-empty list
// must match (an unmatched one selects nothing); runtime IDs match the
// instance's current runtime (indexed). Since leaves out operations that
// ended before it.
type EventFilter struct {
	InstanceIDs, RuntimeIDs, OperationIDs []string
	Since                                 time.Time
	// Limit bounds the operations read.
	Limit int
}

// EventOperation is an operation with the runtime it concerned: the one its
// own record names (a resumption's operations name the new runtime), else
// the instance's.
type EventOperation struct {
	Operation
	RuntimeID string `db:"event_runtime_id"`
}

// EventOperations returns the operations of live instances the filter
// selects, oldest first, with their data (the step history).
func (s *Store) EventOperations(ctx context.Context, f EventFilter) ([]EventOperation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+prefixed("o.", operationColumns)+`,
			coalesce(nullif(o.data->>'runtimeID', ''), i.runtime_id, '') AS event_runtime_id
		FROM operations o JOIN instances i ON i.instance_id = o.instance_id
		WHERE (cardinality($1::text[]) = 0 OR o.instance_id = ANY($1))
			AND (cardinality($2::text[]) = 0 OR i.runtime_id = ANY($2))
			AND (cardinality($3::text[]) = 0 OR o.operation_id = ANY($3))
			AND (o.finished_at IS NULL OR o.finished_at >= $4)
		ORDER BY o.created_at, o.operation_id LIMIT $5`,
		nonNil(f.InstanceIDs), nonNil(f.RuntimeIDs), nonNil(f.OperationIDs), f.Since, f.Limit)
	ops, err := pgx.CollectRows(rows, pgx.RowToStructByName[EventOperation])
	if err != nil {
		return nil, fmt.Errorf("reading operations for events: %w", err)
	}
	return ops, nil
}

// PruneEventHistory drops the step history (data.history) of operations
// that ended before cutoff, at most limit of them; it returns how many.
// Their starts and ends stay: they are the operation's own record.
func (s *Store) PruneEventHistory(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE operations SET data = data - 'history'
		WHERE operation_id IN (SELECT operation_id FROM operations
			WHERE finished_at < $1 AND data ? 'history' LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("pruning event history: %w", err)
	}
	return tag.RowsAffected(), nil
}
