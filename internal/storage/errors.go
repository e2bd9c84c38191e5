package storage

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists means an instance with that ID was written before.
	ErrAlreadyExists = errors.New("already exists")
	// ErrTrialExists means the global account already holds a trial instance.
	ErrTrialExists = errors.New("global account already has a trial instance")
	// ErrArchived means the instance ID belonged to a deprovisioned instance.
	ErrArchived = errors.New("instance was deprovisioned")
	// ErrOperationInProgress means another operation of the instance runs.
	ErrOperationInProgress = errors.New("another operation of the instance is in progress")
)

// interpretError maps driver errors onto the package's sentinel errors, in one
// place, so callers never look at SQLSTATEs.
func interpretError(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		switch pgErr.ConstraintName {
		case "instances_pkey":
			return ErrAlreadyExists
		case "instances_one_trial_per_global_account":
			return ErrTrialExists
		case "operations_one_active_per_instance":
			return ErrOperationInProgress
		}
		return fmt.Errorf("unique constraint %s violated: %w", pgErr.ConstraintName, err)
	}
	return err
}
