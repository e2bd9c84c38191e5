package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// InstanceOperations returns every operation of a live instance, oldest
// first, with their data (step start times, failures): the operations
// console's timeline. An archived instance's operations are gone with it.
func (s *Store) InstanceOperations(ctx context.Context, instanceID string) ([]Operation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+operationColumns+` FROM operations WHERE instance_id = $1
		ORDER BY created_at, operation_id`, instanceID)
	ops, err := pgx.CollectRows(rows, pgx.RowToStructByName[Operation])
	if err != nil {
		return nil, fmt.Errorf("reading operations of instance %s: %w", instanceID, err)
	}
	return ops, nil
}
