package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// pipelinedFixture is a table of numbers over a pool of one connection, so
// that a transaction left open would show on the next use.
type pipelinedFixture struct {
	t    *testing.T
	ctx  context.Context
	pool *pgxpool.Pool
}

func newPipelinedFixture(t *testing.T) *pipelinedFixture {
	t.Helper()
	ctx := testCtx(t)
	cfg := pgtest.NewPool(t).Config()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE numbers (n int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return &pipelinedFixture{t: t, ctx: ctx, pool: pool}
}

// numbers counts the committed rows, and fails the test when the pool's
// connection is not idle (a transaction left open or aborted).
func (f *pipelinedFixture) numbers() int {
	f.t.Helper()
	conn, err := f.pool.Acquire(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Release()
	if status := conn.Conn().PgConn().TxStatus(); status != 'I' {
		f.t.Fatalf("the pool's connection is in transaction status %q, want idle", status)
	}
	var n int
	if err := conn.QueryRow(f.ctx, `SELECT count(*) FROM numbers`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func insertBatch(ns ...int) *pgx.Batch {
	b := &pgx.Batch{}
	for _, n := range ns {
		b.Queue(`INSERT INTO numbers VALUES ($1)`, n)
	}
	return b
}

// The statement BEGIN travels with runs inside the transaction, whichever
// method sends it: a rollback takes it back, a commit keeps it.
func TestPipelinedTxFirstStatementRunsInside(t *testing.T) {
	t.Parallel()
	firsts := []struct {
		name string
		send func(ctx context.Context, tx pgx.Tx) error
	}{
		{"Exec", func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO numbers VALUES (1)`)
			return err
		}},
		{"Query", func(ctx context.Context, tx pgx.Tx) error {
			rows, _ := tx.Query(ctx, `INSERT INTO numbers VALUES (1) RETURNING n`)
			_, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int])
			return err
		}},
		{"QueryRow", func(ctx context.Context, tx pgx.Tx) error {
			var n int
			return tx.QueryRow(ctx, `INSERT INTO numbers VALUES (1) RETURNING n`).Scan(&n)
		}},
		{"SendBatch", func(ctx context.Context, tx pgx.Tx) error {
			return tx.SendBatch(ctx, insertBatch(1)).Close()
		}},
	}
	errAbandon := errors.New("abandoned")
	for _, first := range firsts {
		t.Run(first.name, func(t *testing.T) {
			t.Parallel()
			f := newPipelinedFixture(t)
			err := storage.InPipelinedTx(f.ctx, f.pool, func(tx *storage.PipelinedTx) error {
				if err := first.send(f.ctx, tx); err != nil {
					t.Fatalf("first statement: %v", err)
				}
				// A second statement sees the first: same transaction.
				var n int
				if err := tx.QueryRow(f.ctx, `SELECT count(*) FROM numbers`).Scan(&n); err != nil || n != 1 {
					t.Fatalf("the transaction sees %d rows (%v), want its own 1", n, err)
				}
				return errAbandon
			})
			if !errors.Is(err, errAbandon) {
				t.Fatalf("InPipelinedTx = %v, want fn's error", err)
			}
			if n := f.numbers(); n != 0 {
				t.Fatalf("%d rows after the rollback, want 0", n)
			}
			if err := storage.InPipelinedTx(f.ctx, f.pool, func(tx *storage.PipelinedTx) error {
				return first.send(f.ctx, tx)
			}); err != nil {
				t.Fatalf("InPipelinedTx: %v", err)
			}
			if n := f.numbers(); n != 1 {
				t.Fatalf("%d rows after the commit, want 1", n)
			}
		})
	}
}

func TestPipelinedTxCommitWith(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// before is sent ahead of commitWith's batch (nothing: BEGIN, the
		// batch and COMMIT go in one round trip).
		before  []int
		batch   []int
		wantErr string // SQLSTATE
		want    int
	}{
		{name: "commits the batch", before: []int{1}, batch: []int{2, 3}, want: 3},
		{name: "begins, writes and commits at once", batch: []int{1, 2}, want: 2},
		{name: "a failing statement keeps COMMIT from running", before: []int{1}, batch: []int{2, 1, 3}, wantErr: "23505"},
		{name: "a failing statement of a lone batch", batch: []int{1, 1}, wantErr: "23505"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newPipelinedFixture(t)
			err := storage.InPipelinedTx(f.ctx, f.pool, func(tx *storage.PipelinedTx) error {
				for _, n := range tc.before {
					if _, err := tx.Exec(f.ctx, `INSERT INTO numbers VALUES ($1)`, n); err != nil {
						t.Fatal(err)
					}
				}
				return tx.CommitWith(f.ctx, insertBatch(tc.batch...))
			})
			var pgErr *pgconn.PgError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("InPipelinedTx: %v", err)
			case tc.wantErr != "" && (!errors.As(err, &pgErr) || pgErr.Code != tc.wantErr):
				t.Fatalf("InPipelinedTx = %v, want SQLSTATE %s", err, tc.wantErr)
			}
			if n := f.numbers(); n != tc.want {
				t.Fatalf("%d rows committed, want %d", n, tc.want)
			}
		})
	}
}

func TestPipelinedTxHasNoSavepoints(t *testing.T) {
	t.Parallel()
	f := newPipelinedFixture(t)
	err := storage.InPipelinedTx(f.ctx, f.pool, func(tx *storage.PipelinedTx) error {
		if _, err := tx.Exec(f.ctx, `INSERT INTO numbers VALUES (1)`); err != nil {
			return err
		}
		if nested, err := tx.Begin(f.ctx); err == nil {
			t.Errorf("Begin gave a nested transaction %v, want an error", nested)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InPipelinedTx: %v", err)
	}
	if n := f.numbers(); n != 1 {
		t.Fatalf("%d rows committed, want 1", n)
	}
}
