package pgtest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StatementCounter is a pgx tracer counting the statements a pool sends, for
// tests that bound the statements of an operation.
type StatementCounter struct{ n atomic.Int64 }

// TraceQueryStart implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Count is the number of statements sent so far.
func (c *StatementCounter) Count() int64 { return c.n.Load() }

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
