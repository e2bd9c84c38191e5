package storage

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// What keb does when a highly available PostgreSQL fails over (a standby
// promoted after the primary died or was switched over):
//
//   - A multi-host URL (postgres://u@a:5432,b:5432/keb) connects to the first
//     of its hosts that accepts writes: target_session_attrs=read-write is
//     the default for one (failoverDefaults), so keb never settles on a
//     standby, and connect_timeout bounds each host, so a host that accepts
//     TCP but never answers (frozen, cut off) costs seconds, not the request.
//   - A connection that broke is closed by pgx and never handed out again; an
//     idle one is pinged before use once idle for a second (pgxpool's
//     default), so the pool drains the old primary's connections by itself.
//   - A connection whose server turned read-only (SQLSTATE 25006: a demoted
//     primary, or a standby reached without target_session_attrs) stays open
//     as far as pgx knows; readOnlyTracer marks it and the pool drops it on
//     release, and resets, because every connection opened before points at
//     that server too.
//   - What is safe to run again runs again, a few times within the request
//     (retryLost): reads, and transactions whose re-run is harmless: nothing
//     reached the server (pgconn.SafeToRetry), or the transaction is one whose
//     second run finds what the first one committed (an accept finds its
//     instance, which the broker answers as a re-sent PUT; a DELETE finds its
//     deprovisioning). Anything else fails with a connection error, which the
//     broker answers 503 with Retry-After, and the engine retries its step.

// defaultConnectTimeout bounds each host of a connection attempt unless the
// URL sets connect_timeout.
const defaultConnectTimeout = 5 * time.Second

// failoverDefaults applies keb's defaults to a parsed pool configuration and
// installs the read-only detection.
func failoverDefaults(cfg *pgxpool.Config, tracers []pgx.QueryTracer) *readOnlyTracer {
	cc := cfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = defaultConnectTimeout
	}
	if len(cc.Fallbacks) > 0 && cc.ValidateConnect == nil {
		// Several hosts and no choice made: the primary, whichever it is.
		cc.ValidateConnect = pgconn.ValidateConnectTargetSessionAttrsReadWrite
	}
	ro := &readOnlyTracer{next: tracers}
	cc.Tracer = ro
	afterRelease := cfg.AfterRelease
	cfg.AfterRelease = func(c *pgx.Conn) bool {
		if readOnly(c) {
			return false
		}
		return afterRelease == nil || afterRelease(c)
	}
	return ro
}

const readOnlyKey = "keb.readOnly"

func readOnly(c *pgx.Conn) bool {
	v, _ := c.PgConn().CustomData()[readOnlyKey].(bool)
	return v
}

// readOnlyTracer sees every statement's outcome: one refused because the
// server is read-only marks its connection for closing and resets the pool.
// It passes statements on to the tracers keb counts them with.
type readOnlyTracer struct {
	next []pgx.QueryTracer

	mu        sync.Mutex
	pool      *pgxpool.Pool
	lastReset time.Time
}

// TraceQueryStart implements pgx.QueryTracer.
func (t *readOnlyTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	for _, n := range t.next {
		ctx = n.TraceQueryStart(ctx, c, d)
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (t *readOnlyTracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	t.check(c, d.Err)
	for _, n := range t.next {
		n.TraceQueryEnd(ctx, c, d)
	}
}

// TraceBatchStart implements pgx.BatchTracer.
func (t *readOnlyTracer) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	for _, n := range t.next {
		if bt, ok := n.(pgx.BatchTracer); ok {
			ctx = bt.TraceBatchStart(ctx, c, d)
		}
	}
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer.
func (t *readOnlyTracer) TraceBatchQuery(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	t.check(c, d.Err)
	for _, n := range t.next {
		if bt, ok := n.(pgx.BatchTracer); ok {
			bt.TraceBatchQuery(ctx, c, d)
		}
	}
}

// TraceBatchEnd implements pgx.BatchTracer.
func (t *readOnlyTracer) TraceBatchEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchEndData) {
	t.check(c, d.Err)
	for _, n := range t.next {
		if bt, ok := n.(pgx.BatchTracer); ok {
			bt.TraceBatchEnd(ctx, c, d)
		}
	}
}

func (t *readOnlyTracer) setPool(p *pgxpool.Pool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pool = p
}

func (t *readOnlyTracer) check(c *pgx.Conn, err error) {
	if !readOnlyError(err) {
		return
	}
	c.PgConn().CustomData()[readOnlyKey] = true
	t.mu.Lock()
	pool := t.pool
	reset := pool != nil && time.Since(t.lastReset) > time.Second
	if reset {
		t.lastReset = time.Now()
	}
	t.mu.Unlock()
	if reset {
		// Idle connections close now, acquired ones when released.
		go pool.Reset()
	}
}

// readOnlyError reports a statement refused because the server does not
// accept writes (any more).
func readOnlyError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "25006"
}

// lostServer reports whether err means the connection's server is gone or
// no longer the primary: what a failover looks like to a client, and worth
// one more try on another connection. A timeout is not: the server may be
// busy with the statement still.
func lostServer(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || pgconn.Timeout(err) {
		return false
	}
	if pgconn.SafeToRetry(err) || readOnlyError(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin or crash shutdown, not yet accepting connections
			return true
		}
		return len(pgErr.Code) == 5 && pgErr.Code[:2] == "08" // connection exception
	}
	var connectErr *pgconn.ConnectError
	return errors.As(err, &connectErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errConnClosed(err)
}

// retryBackoff are the waits before the retries of retryLost: together
// about the time a standby takes to be promoted, well inside a request's
// deadline.
var retryBackoff = []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, 1500 * time.Millisecond}

// retryLost runs fn, and again after a wait while it fails with lostServer
// and ctx allows. fn must be safe to run again after a failure of that kind
// (see the top of this file).
func retryLost(ctx context.Context, fn func() error) error {
	err := fn()
	for _, wait := range retryBackoff {
		if !lostServer(err) {
			return err
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		err = fn()
	}
	return err
}
