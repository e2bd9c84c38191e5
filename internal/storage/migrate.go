package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/kyma-keb/keb/migrations"
)

// MigrationState tells where a database stands against the embedded migrations.
type MigrationState struct {
	Current     int64 // highest applied version, 0 for an empty database
	Head        int64 // highest embedded version
	QueueBehind bool  // the work queue's (River's) tables lack migrations
}

// AtHead reports whether every embedded migration has been applied.
func (s MigrationState) AtHead() bool { return s.Current == s.Head && !s.QueueBehind }

// Usable reports whether this keb can work on the schema: at head, or
// ahead because a newer keb of a rolling upgrade migrated it (keb's
// migrations keep the previous version working).
func (s MigrationState) Usable() bool { return s.Current >= s.Head && !s.QueueBehind }

// newProvider builds a goose provider over the embedded migrations. With
// locked, its session lock (a PostgreSQL advisory lock) makes replicas
// starting at once apply each migration once. Only what migrates takes it:
// goose takes it for reading the version too, and readiness reads the
// version every few seconds on every replica, so two replicas' checks, or a
// check beside a running migration, would wait for each other's lock (goose
// retries every 5 s) past the check's 3 s and report a database that
// answers as one that did not (at 100,000 runtimes, with the machine busy,
// a replica failed its readiness that way for five minutes:
// docs/performance.md, "Fleet scale").
func newProvider(pool *pgxpool.Pool, locked bool) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	var opts []goose.ProviderOption
	if locked {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("creating migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(database.DialectPostgres, db, migrations.FS, opts...)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("loading embedded migrations: %w", err)
	}
	return p, db, nil
}

// Migration session limits (MigrateOptions' defaults). lock_timeout is what
// keeps a migration from stalling the replicas that serve meanwhile: a DDL
// statement waiting for its lock behind a long transaction would queue every
// later query on that table behind itself; with lock_timeout it gives up
// instead, the migration's transaction rolls back, and it is tried again
// after a pause. statement_timeout bounds a migration that runs away.
const (
	DefaultMigrationLockTimeout      = 5 * time.Second
	DefaultMigrationStatementTimeout = 10 * time.Minute
	// migrationAttempts bounds the tries of a migration refused its locks.
	migrationAttempts = 20
)

// migrateLockKey names keb's migration advisory lock: one migrator at a time
// across replicas (and their init containers).
const migrateLockKey = "keb-migrate-up"

// migrationLockPoll is the pause between tries of the migration lock.
const migrationLockPoll = 500 * time.Millisecond

// MigrateOptions shape MigrateUpWith.
type MigrateOptions struct {
	// To stops after this version (keb's own migrations; River's queue
	// tables are always brought up to date); 0 applies all.
	To int64
	// LockTimeout and StatementTimeout are the migrations' session limits;
	// 0 means the defaults above.
	LockTimeout, StatementTimeout time.Duration
	// OnLockTimeout, if set, hears of each try that gave up on a lock
	// before the migration is tried again.
	OnLockTimeout func(err error)
	// OnMigrationLockBusy, if set, hears of each try of keb's migration
	// lock that found another migrator holding it.
	OnMigrationLockBusy func()

	// observe, if set, sees every statement the migrations' connections
	// send, with the session settings the connection was opened with
	// (tests: every migration runs with the limits).
	observe func(sql string, args []any, params map[string]string)
}

// MigrateUp applies every embedded migration not yet applied and returns the
// versions it applied.
func MigrateUp(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
	return MigrateUpWith(ctx, pool, MigrateOptions{})
}

// MigrateUpWith applies the embedded migrations not yet applied, up to
// opts.To, under keb's migration lock and with lock_timeout and
// statement_timeout, and returns the versions it applied.
func MigrateUpWith(ctx context.Context, pool *pgxpool.Pool, opts MigrateOptions) ([]int64, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultMigrationLockTimeout
	}
	if opts.StatementTimeout <= 0 {
		opts.StatementTimeout = DefaultMigrationStatementTimeout
	}
	// goose locks its own migrations, River's migrator does not: one lock
	// around both keeps replicas starting together from racing on either.
	// A second replica waits for the first one's migrations, which is the
	// point, but never inside a statement: a session blocked in
	// pg_advisory_lock holds a snapshot, and CREATE INDEX CONCURRENTLY
	// waits for every older snapshot to go, so the first replica's
	// concurrent build would wait for the second replica, which waits for
	// it. It tries the lock between pauses instead, holding nothing.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquiring connection for migration lock: %w", err)
	}
	defer conn.Release()
	for {
		var locked bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, migrateLockKey).Scan(&locked); err != nil {
			return nil, fmt.Errorf("taking migration lock: %w", err)
		}
		if locked {
			break
		}
		if opts.OnMigrationLockBusy != nil {
			opts.OnMigrationLockBusy()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the migration lock another migrator holds: %w", ctx.Err())
		case <-time.After(migrationLockPoll):
		}
	}
	defer func() {
		_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext($1))`, migrateLockKey)
	}()

	// The migrations' own connections carry the session limits.
	cfg := pool.Config().Copy()
	cfg.MinConns, cfg.MaxConns = 0, 4
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(opts.LockTimeout.Milliseconds(), 10)
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	if opts.observe != nil {
		cfg.ConnConfig.Tracer = observingTracer{next: cfg.ConnConfig.Tracer, observe: opts.observe}
	}
	migPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("creating migration pool: %w", err)
	}
	defer migPool.Close()

	p, db, err := newProvider(migPool, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	concurrent, err := concurrentIndexes()
	if err != nil {
		return nil, err
	}
	var applied []int64
	for attempt := 1; ; attempt++ {
		var res []*goose.MigrationResult
		err = dropFailedIndexBuilds(ctx, migPool, concurrent)
		if err == nil && opts.To > 0 {
			res, err = p.UpTo(ctx, opts.To)
		} else if err == nil {
			res, err = p.Up(ctx)
		}
		var partial *goose.PartialError
		if errors.As(err, &partial) {
			res = partial.Applied
		}
		for _, r := range res {
			applied = append(applied, r.Source.Version)
		}
		if err == nil {
			break
		}
		if !lockTimedOut(err) || attempt == migrationAttempts {
			return applied, fmt.Errorf("applying migrations: %w", err)
		}
		if opts.OnLockTimeout != nil {
			opts.OnLockTimeout(err)
		}
		select {
		case <-ctx.Done():
			return applied, fmt.Errorf("applying migrations: %w", errors.Join(err, ctx.Err()))
		case <-time.After(min(time.Duration(attempt)*time.Second, 10*time.Second)):
		}
	}
	// The work queue's tables are River's own; River versions them itself.
	rm, err := rivermigrate.New(riverpgxv5.New(migPool), nil)
	if err != nil {
		return nil, fmt.Errorf("loading queue migrations: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("applying queue migrations: %w", err)
	}
	return applied, nil
}

// concurrentIndex finds the indexes a migration builds CONCURRENTLY (in a
// migration without a transaction: see migrations/00022).
var concurrentIndex = regexp.MustCompile(`(?i)CREATE\s+(?:UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+([a-z_][a-z0-9_]*)`)

// concurrentIndexes names the indexes keb's migrations build concurrently.
func concurrentIndexes() ([]string, error) {
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("listing embedded migrations: %w", err)
	}
	var names []string
	for _, f := range files {
		b, err := migrations.FS.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", f, err)
		}
		for _, m := range concurrentIndex.FindAllSubmatch(b, -1) {
			names = append(names, strings.ToLower(string(m[1])))
		}
	}
	return names, nil
}

// dropFailedIndexBuilds drops what a failed concurrent build of one of
// names left behind: CREATE INDEX CONCURRENTLY commits the index's catalog
// entry before it builds it, so a build that fails part-way (lock_timeout
// while it waits for older transactions, statement_timeout, a primary that
// died and a standby promoted with the entry replicated) leaves an INVALID
// index. It is never used for reads but costs every write, and the next
// try's IF NOT EXISTS would take it for done. An invalid index that a build
// in progress is filling is left alone (keb's migration lock rules out
// another keb migrator; an operator's REINDEX CONCURRENTLY may be running).
func dropFailedIndexBuilds(ctx context.Context, pool *pgxpool.Pool, names []string) error {
	if len(names) == 0 {
		return nil
	}
	rows, _ := pool.Query(ctx, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE NOT i.indisvalid AND c.relname = any($1)
		AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
		AND NOT EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = i.indexrelid)`, names)
	invalid, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("looking for failed index builds: %w", err)
	}
	for _, name := range invalid {
		// CONCURRENTLY: a plain DROP INDEX would lock the table against
		// the replicas' reads and writes.
		if _, err := pool.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgx.Identifier{name}.Sanitize()); err != nil {
			return fmt.Errorf("dropping the invalid index %s a failed concurrent build left: %w", name, err)
		}
	}
	return nil
}

// observingTracer shows the migrations' statements to MigrateOptions.observe.
type observingTracer struct {
	next    pgx.QueryTracer
	observe func(sql string, args []any, params map[string]string)
}

func (t observingTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.observe(d.SQL, d.Args, c.Config().RuntimeParams)
	if t.next != nil {
		ctx = t.next.TraceQueryStart(ctx, c, d)
	}
	return ctx
}

func (t observingTracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	if t.next != nil {
		t.next.TraceQueryEnd(ctx, c, d)
	}
}

// lockTimedOut reports a statement that gave up waiting for a lock
// (lock_not_available, what lock_timeout raises).
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// MigrateDown rolls back the most recent migration.
func MigrateDown(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	p, db, err := newProvider(pool, true)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	res, err := p.Down(ctx)
	if err != nil {
		if errors.Is(err, goose.ErrNoNextVersion) {
			return 0, nil
		}
		return 0, fmt.Errorf("rolling back migration: %w", err)
	}
	return res.Source.Version, nil
}

// Migrations reports the applied and the embedded head version.
func Migrations(ctx context.Context, pool *pgxpool.Pool) (MigrationState, error) {
	p, db, err := newProvider(pool, false)
	if err != nil {
		return MigrationState{}, err
	}
	defer db.Close()
	cur, err := p.GetDBVersion(ctx)
	if err != nil {
		return MigrationState{}, fmt.Errorf("reading schema version: %w", err)
	}
	srcs := p.ListSources()
	var head int64
	if len(srcs) > 0 {
		head = srcs[len(srcs)-1].Version
	}
	st := MigrationState{Current: cur, Head: head}
	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return MigrationState{}, fmt.Errorf("loading queue migrations: %w", err)
	}
	// A missing river_migration table reads as no versions (queue behind);
	// any error means the version could not be read, which callers must
	// not report as a schema behind.
	existing, err := rm.ExistingVersions(ctx)
	if err != nil {
		return MigrationState{}, fmt.Errorf("reading queue schema version: %w", err)
	}
	all := rm.AllVersions()
	st.QueueBehind = len(existing) == 0 || existing[len(existing)-1].Version < all[len(all)-1].Version
	return st, nil
}
