package storage

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// WaitingAccepts is how many CreateProvisioning calls wait for the accept
// transaction in flight: tests wait for a batch to form before releasing it.
func (s *Store) WaitingAccepts() int {
	s.accepts.mu.Lock()
	defer s.accepts.mu.Unlock()
	return len(s.accepts.waiting)
}

// MaxAcceptsInFlight is how many accepts a test must hold in flight before
// further ones queue.
const MaxAcceptsInFlight = maxAcceptsInFlight

// PipelinedTx is the transaction of the single accept (pipelinedtx.go).
type PipelinedTx = pipelinedTx

// InPipelinedTx runs fn in a PipelinedTx on a connection of pool.
func InPipelinedTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx *PipelinedTx) error) error {
	return inPipelinedTx(ctx, pool, fn)
}

// CommitWith sends b and COMMIT in one round trip.
func (t *pipelinedTx) CommitWith(ctx context.Context, b *pgx.Batch) error {
	return t.commitWith(ctx, b)
}

// MigrateUpObserved is MigrateUpWith with observe seeing every statement
// the migrations send and the session settings of its connection.
func MigrateUpObserved(ctx context.Context, pool *pgxpool.Pool, opts MigrateOptions, observe func(sql string, args []any, params map[string]string)) ([]int64, error) {
	opts.observe = observe
	return MigrateUpWith(ctx, pool, opts)
}

// DropFailedIndexBuilds drops the invalid leftovers of names' concurrent builds.
func DropFailedIndexBuilds(ctx context.Context, pool *pgxpool.Pool, names []string) error {
	return dropFailedIndexBuilds(ctx, pool, names)
}

// ConcurrentIndexes names the indexes the migrations build concurrently.
func ConcurrentIndexes() ([]string, error) { return concurrentIndexes() }

// CensusSQL are the census's counting statements, for their plans' test.
var CensusSQL = []string{censusInstancesSQL, censusKymaStatesSQL, censusInProgressSQL}

// AccountUsageQuery is AccountUsage's statement, for EXPLAIN.
const AccountUsageQuery = accountUsageQuery
