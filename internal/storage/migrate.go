package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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

// newProvider builds a goose provider over the embedded migrations. Its
// session lock (a PostgreSQL advisory lock) makes replicas starting at once
// apply each migration once.
func newProvider(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("creating migration lock: %w", err)
	}
	p, err := goose.NewProvider(database.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("loading embedded migrations: %w", err)
	}
	return p, db, nil
}

// MigrateUp applies every embedded migration not yet applied and returns the
// versions it applied.
func MigrateUp(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
	// goose locks its own migrations, River's migrator does not: one lock
	// around both keeps replicas starting together from racing on either.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquiring connection for migration lock: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('keb-migrate-up'))`); err != nil {
		return nil, fmt.Errorf("taking migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext('keb-migrate-up'))`)
	}()
	p, db, err := newProvider(pool)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	res, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("applying migrations: %w", err)
	}
	applied := make([]int64, 0, len(res))
	for _, r := range res {
		applied = append(applied, r.Source.Version)
	}
	// The work queue's tables are River's own; River versions them itself.
	rm, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return nil, fmt.Errorf("loading queue migrations: %w", err)
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("applying queue migrations: %w", err)
	}
	return applied, nil
}

// MigrateDown rolls back the most recent migration.
func MigrateDown(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	p, db, err := newProvider(pool)
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
	p, db, err := newProvider(pool)
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
