package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipelinedTx is a transaction that spends no round trip of its own on
// BEGIN or COMMIT: BEGIN goes to PostgreSQL in one pipeline with the first
// statement, and commitWith sends COMMIT in one pipeline behind the last
// batch. pgx's own transactions wait for BEGIN's answer before the first
// statement and for the last statement's before COMMIT; a lone provisioning
// accept (River's insert, the instance and operation batch) thus took four
// round trips where two carry the same statements. At one request at a time
// every round trip is a socket write (the loopback's delivery to PostgreSQL
// charged to the writer), a read, and a goroutine parked and woken: the two
// saved were about a fifth of an accept's broker CPU.
//
// It is a pgx.Tx so that River's InsertTx runs in it. A statement behind
// BEGIN in a pipeline runs inside the transaction BEGIN opened (PostgreSQL
// turns the pipeline's implicit transaction into that explicit one), and a
// failing statement makes PostgreSQL skip the rest of its pipeline, COMMIT
// included, leaving the transaction aborted for Rollback.
//
// Only inPipelinedTx makes one; it is not safe for concurrent use, and
// nested transactions (savepoints) and large objects are not supported.
type pipelinedTx struct {
	conn  *pgx.Conn
	begun bool
}

var _ pgx.Tx = (*pipelinedTx)(nil)

// errNested is what pipelinedTx.Begin answers: nothing that runs in one
// asks for a savepoint.
var errNested = errors.New("a pipelined transaction has no nested transactions")

// inPipelinedTx runs fn in a pipelinedTx on a connection of pool. fn ends
// the transaction with commitWith (or its statements are committed once it
// returns nil); an error from fn rolls back whatever was sent. Like
// pgx.BeginFunc, it returns fn's error unwrapped.
func inPipelinedTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx *pipelinedTx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A connection still in a transaction when released (a rollback that
	// failed) is closed by the pool, never reused.
	defer conn.Release()
	tx := &pipelinedTx{conn: conn.Conn()}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// beginWith puts BEGIN in front of b when nothing has been sent yet, and
// reports whether it did: the caller then reads BEGIN's result first.
func (t *pipelinedTx) beginWith(b *pgx.Batch) bool {
	if t.begun {
		return false
	}
	t.begun = true
	b.QueuedQueries = append([]*pgx.QueuedQuery{{SQL: "begin"}}, b.QueuedQueries...)
	return true
}

// sendBatch sends b (with BEGIN in front when it opens the transaction) and
// returns its results from b's first statement on.
func (t *pipelinedTx) sendBatch(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	began := t.beginWith(b)
	br := t.conn.SendBatch(ctx, b)
	if began {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, fmt.Errorf("beginning transaction: %w", err)
		}
	}
	return br, nil
}

// beginWithStatement sends BEGIN and one statement in one round trip and
// returns the statement's results, to be closed.
func (t *pipelinedTx) beginWithStatement(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return t.sendBatch(ctx, b)
}

// commitWith sends b's statements and COMMIT in one round trip (with BEGIN
// when nothing was sent yet) and returns the first statement's error, if
// any. PostgreSQL runs the COMMIT unless a statement fails: whatever must
// keep the transaction from committing has to be a failing statement, not a
// result the caller looks at. After a failure the transaction waits,
// aborted, for Rollback.
func (t *pipelinedTx) commitWith(ctx context.Context, b *pgx.Batch) (err error) {
	statements := b.Len()
	b.Queue("commit")
	br, err := t.sendBatch(ctx, b)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	for range statements {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	tag, err := br.Exec()
	switch {
	case err != nil:
		return fmt.Errorf("committing: %w", err)
	case tag.String() == "ROLLBACK":
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Begin implements pgx.Tx; savepoints are not supported.
func (t *pipelinedTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNested }

// Commit commits what was sent since BEGIN; nothing when nothing was, or
// when commitWith committed already.
func (t *pipelinedTx) Commit(ctx context.Context) error {
	if !t.begun || t.conn.PgConn().TxStatus() == 'I' {
		return nil
	}
	tag, err := t.conn.Exec(ctx, "commit")
	if err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	if tag.String() == "ROLLBACK" {
		return pgx.ErrTxCommitRollback
	}
	return nil
}

// Rollback ends the transaction if it is still open; when the ROLLBACK
// fails the connection stays in its transaction, and the pool closes it on
// release.
func (t *pipelinedTx) Rollback(ctx context.Context) error {
	if !t.begun || t.conn.PgConn().TxStatus() == 'I' {
		return nil
	}
	if _, err := t.conn.Exec(ctx, "rollback"); err != nil {
		return fmt.Errorf("rolling back: %w", err)
	}
	return nil
}

// begin sends BEGIN alone, for the statements that do not pipeline it.
func (t *pipelinedTx) begin(ctx context.Context) error {
	if t.begun {
		return nil
	}
	t.begun = true
	if _, err := t.conn.Exec(ctx, "begin"); err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	return nil
}

// CopyFrom implements pgx.Tx.
func (t *pipelinedTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begin(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

// SendBatch implements pgx.Tx; the results start at b's first statement.
func (t *pipelinedTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	br, err := t.sendBatch(ctx, b)
	if err != nil {
		return failedBatch{err: err}
	}
	return br
}

// LargeObjects implements pgx.Tx; large objects are not supported, and the
// value returned fails on use.
func (t *pipelinedTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Prepare implements pgx.Tx.
func (t *pipelinedTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

// Exec implements pgx.Tx.
func (t *pipelinedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	br, err := t.beginWithStatement(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Query implements pgx.Tx.
func (t *pipelinedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begun {
		return t.conn.Query(ctx, sql, args...)
	}
	br, err := t.beginWithStatement(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	out := &batchRows{Rows: rows, results: br}
	if err != nil {
		out.Close() // a caller seeing err need not close them
	}
	return out, err
}

// QueryRow implements pgx.Tx.
func (t *pipelinedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	return firstRow{rows: rows, err: err}
}

// Conn implements pgx.Tx.
func (t *pipelinedTx) Conn() *pgx.Conn { return t.conn }

// batchRows are the rows of a statement sent in a batch of its own (behind
// BEGIN): closing them, or reading past the last, reads the batch's end, so
// that the connection is free for the next statement.
type batchRows struct {
	pgx.Rows
	results pgx.BatchResults
	closed  bool
	err     error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.results.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// firstRow is QueryRow's answer from Query's rows, as pgx's own.
type firstRow struct {
	rows pgx.Rows
	err  error
}

func (r firstRow) Scan(dest ...any) error {
	if r.err != nil {
		if r.rows != nil {
			r.rows.Close()
		}
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// failedBatch is the results of a batch that could not be sent.
type failedBatch struct{ err error }

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return firstRow{err: f.err} }
func (f failedBatch) Close() error                     { return f.err }
