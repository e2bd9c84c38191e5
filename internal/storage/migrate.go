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

	"github.com/kyma-keb/keb/migrations"
)

// MigrationState tells where a database stands against the embedded migrations.
type MigrationState struct {
	Current int64 // highest applied version, 0 for an empty database
	Head    int64 // highest embedded version
}

// AtHead reports whether every embedded migration has been applied.
func (s MigrationState) AtHead() bool { return s.Current == s.Head }

// newProvider builds a goose provider over the embedded migrations. goose
// takes locks so that replicas starting at once apply each migration once.
func newProvider(pool *pgxpool.Pool) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(database.DialectPostgres, db, migrations.FS)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("loading embedded migrations: %w", err)
	}
	return p, db, nil
}

// MigrateUp applies every embedded migration not yet applied and returns the
// versions it applied.
func MigrateUp(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
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
	return MigrationState{Current: cur, Head: head}, nil
}
