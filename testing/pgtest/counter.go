package pgtest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StatementCounter is a pgx tracer counting the statements a pool sends, for
// tests that bound the statements of an operation, and recording its round
// trips (a statement alone, or a batch's statements in one pipeline) for
// tests that bound those.
type StatementCounter struct {
	n          atomic.Int64
	mu         sync.Mutex
	roundTrips [][]string
}

// TraceQueryStart implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.mu.Lock()
	c.roundTrips = append(c.roundTrips, []string{data.SQL})
	c.mu.Unlock()
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer: a batch is one round trip.
func (c *StatementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	sqls := make([]string, 0, data.Batch.Len())
	for _, q := range data.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
	}
	c.mu.Lock()
	c.roundTrips = append(c.roundTrips, sqls)
	c.mu.Unlock()
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (c *StatementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *StatementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Count is the number of statements sent alone so far (a batch's are not
// counted).
func (c *StatementCounter) Count() int64 { return c.n.Load() }

// RoundTrips are the statements of each round trip since the last call,
// in order: one statement, or a batch's.
func (c *StatementCounter) RoundTrips() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.roundTrips
	c.roundTrips = nil
	return out
}

// CountingPool opens a second pool on pool's database whose statements the
// returned counter counts; it is closed when the test ends.
func CountingPool(t testing.TB, pool *pgxpool.Pool) (*pgxpool.Pool, *StatementCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	counter := &StatementCounter{}
	cfg.ConnConfig.Tracer = counter
	counted, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(counted.Close)
	return counted, counter
}
