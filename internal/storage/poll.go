package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// OperationPoll is what a last_operation poll reads: the operation's state.
// It is the platform's most frequent request, so it is one indexed statement
// that reads neither the instance's parameters nor its sealed credentials.
// (A deprovisioned instance has no row: its poll is answered from the
// archive.)
type OperationPoll struct {
	// Found is false when the instance has no such operation.
	Found       bool
	Type        OperationType
	State       OperationState
	Description string
}

// InProgress reports whether the polled operation has not finished yet.
func (p OperationPoll) InProgress() bool { return p.State == OperationInProgress }

const (
	pollOperation = `SELECT o.type, o.state, o.description
		FROM instances i LEFT JOIN operations o ON o.instance_id = i.instance_id AND o.operation_id = $2
		WHERE i.instance_id = $1`
	pollLastOperation = `SELECT o.type, o.state, o.description
		FROM instances i LEFT JOIN LATERAL (SELECT type, state, description FROM operations
			WHERE instance_id = i.instance_id ORDER BY created_at DESC, operation_id DESC LIMIT 1) o ON true
		WHERE i.instance_id = $1`
)

// PollOperation reads operationID of the instance, or its newest operation
// when operationID is empty, in one statement (one snapshot). It returns
// ErrNotFound when the instance has no row (unknown or archived).
func (s *Store) PollOperation(ctx context.Context, instanceID, operationID string) (OperationPoll, error) {
	var p OperationPoll
	var opType, state, description *string
	err := retryLost(ctx, func() error {
		var row pgx.Row
		if operationID == "" {
			row = s.pool.QueryRow(ctx, pollLastOperation, instanceID)
		} else {
			row = s.pool.QueryRow(ctx, pollOperation, instanceID, operationID)
		}
		return row.Scan(&opType, &state, &description)
	})
	if err != nil {
		return OperationPoll{}, interpretError(err)
	}
	if opType != nil {
		p.Found, p.Type, p.State = true, OperationType(*opType), OperationState(*state)
		if description != nil {
			p.Description = *description
		}
	}
	return p, nil
}
