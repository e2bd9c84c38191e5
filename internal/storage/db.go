// Package storage keeps keb's durable state in PostgreSQL: instances, their
// operations, and the schema migrations that shape them. It knows nothing of
// HTTP or Kubernetes.
package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Open connects a pgx pool to databaseURL (one host, or several of a highly
// available PostgreSQL: the first that accepts writes is used, see
// failover.go) and checks it with a ping, because
// pgxpool connects lazily and would otherwise report a bad URL only on first use.
//
// tracer, if given, sees every statement (keb counts them per operation).
//
// maxConns > 0 sizes the pool (else pgx's default, or pool_max_conns in the
// URL): a replica needs about two connections per worker (one holds the
// instance lock while the other runs the step's queries) plus the queue's own.
func Open(ctx context.Context, databaseURL string, maxConns int32, tracer ...pgx.QueryTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parsing database URL: %w", err)
	}
	// A multi-host URL finds the primary, and connections to a server that
	// turned read-only are dropped (failover.go).
	readOnly := failoverDefaults(cfg, tracer)
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	// Server-side bounds, unless the URL sets its own: no statement runs,
	// and no transaction sits idle holding locks, for longer than a
	// platform would wait for an answer. Requests have tighter deadlines of
	// their own; these protect against work nobody waits for any more.
	for param, value := range serverLimits {
		if _, set := cfg.ConnConfig.RuntimeParams[param]; !set {
			cfg.ConnConfig.RuntimeParams[param] = value
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("creating database pool: %w", err)
	}
	readOnly.setPool(pool)
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to database %s@%s:%d/%s: %w",
			cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// serverLimits are the session settings Open applies unless the database URL
// sets them (e.g. ?statement_timeout=0 for a one-off long migration).
var serverLimits = map[string]string{
	"statement_timeout":                   "60s",
	"idle_in_transaction_session_timeout": "60s",
}
