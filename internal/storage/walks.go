package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Walk is where a walk over the fleet stands (table fleet_walks).
type Walk struct {
	// Cursor is the last instance ID the current pass finished; "" between
	// passes.
	Cursor string `db:"cursor"`
	// PassStartedAt is when the current pass began; PassFinishedAt when
	// the last one ended. nil: never.
	PassStartedAt  *time.Time `db:"pass_started_at"`
	PassFinishedAt *time.Time `db:"pass_finished_at"`
}

// Walk reads the named walk's state; a walk never saved is the zero Walk.
func (s *Store) Walk(ctx context.Context, name string) (Walk, error) {
	rows, _ := s.pool.Query(ctx, `SELECT cursor, pass_started_at, pass_finished_at FROM fleet_walks WHERE name = $1`, name)
	w, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Walk])
	if errors.Is(err, pgx.ErrNoRows) {
		return Walk{}, nil
	}
	if err != nil {
		return Walk{}, fmt.Errorf("reading walk %s: %w", name, err)
	}
	return w, nil
}

// SaveWalk writes the named walk's state.
func (s *Store) SaveWalk(ctx context.Context, name string, w Walk) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO fleet_walks (name, cursor, pass_started_at, pass_finished_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO UPDATE SET cursor = $2, pass_started_at = $3,
		pass_finished_at = $4, updated_at = now()`, name, w.Cursor, w.PassStartedAt, w.PassFinishedAt)
	if err != nil {
		return fmt.Errorf("saving walk %s: %w", name, err)
	}
	return nil
}
