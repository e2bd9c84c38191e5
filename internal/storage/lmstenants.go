package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// EnsureLMSTenant returns the recorded LMS tenant of (name, region), or
// creates one with create and records it; created tells which. It runs in a
// transaction holding the advisory lock
// pg_advisory_xact_lock(hashtextextended('keb-lms:' || name || '/' ||
// region, 0)), so that of the provisionings of one global account in every
// replica only one creates the tenant and the others find it; PostgreSQL
// releases the lock at commit or rollback, also when the replica dies.
// create (a call to LMS) runs while the lock and a pool connection are
// held. A crash after LMS created the tenant and before the commit leaves
// that tenant unrecorded (LMS cannot be asked for it by name): the re-run
// creates another, as upstream's did.
func (s *Store) EnsureLMSTenant(ctx context.Context, name, region string, create func(ctx context.Context) (string, error)) (id string, created bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('keb-lms:' || $1 || '/' || $2, 0))`, name, region); err != nil {
			return fmt.Errorf("locking the LMS tenant %s/%s: %w", name, region, err)
		}
		err := tx.QueryRow(ctx, `SELECT id FROM lms_tenants WHERE name = $1 AND region = $2`, name, region).Scan(&id)
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("reading the LMS tenant %s/%s: %w", name, region, err)
		}
		if id, err = create(ctx); err != nil {
			return err
		}
		created = true
		if _, err := tx.Exec(ctx, `INSERT INTO lms_tenants (name, region, id) VALUES ($1, $2, $3)`, name, region, id); err != nil {
			return fmt.Errorf("recording the LMS tenant %s/%s (%s): %w", name, region, id, err)
		}
		return nil
	})
	return id, created, err
}

// ForgetLMSTenant removes the record of tenant id of (name, region), which
// LMS no longer knows, so that the next EnsureLMSTenant creates another; a
// record of another ID (a replica created that one since) stays.
func (s *Store) ForgetLMSTenant(ctx context.Context, name, region, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM lms_tenants WHERE name = $1 AND region = $2 AND id = $3`, name, region, id); err != nil {
		return fmt.Errorf("forgetting the LMS tenant %s/%s (%s): %w", name, region, id, err)
	}
	return nil
}
