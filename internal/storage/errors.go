package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists means an instance with that ID was written before.
	ErrAlreadyExists = errors.New("already exists")
	// ErrOnePerGlobalAccount means the global account already holds an
	// instance of a plan it may hold only once (plans.yaml onePerGlobalAccount).
	ErrOnePerGlobalAccount = errors.New("global account already has an instance of this plan")
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
		case "instances_one_per_global_account":
			return ErrOnePerGlobalAccount
		case "operations_one_active_per_instance":
			return ErrOperationInProgress
		}
		return fmt.Errorf("unique constraint %s violated: %w", pgErr.ConstraintName, err)
	}
	if errors.As(err, &pgErr) && pgErr.Code == "23502" && pgErr.TableName == "operations" && pgErr.ColumnName == "instance_id" {
		// A new instance's operation refused because its ID is archived
		// (insertNewInstanceOperationSQL).
		return ErrArchived
	}
	return err
}

// Unavailable reports whether err means the database could not be reached,
// dropped the connection, or did not answer in time: a condition of the
// database, not of the request, which callers answer with "retry later".
// A transaction that failed this way committed nothing.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"): // connection exception
			return true
		case pgErr.Code == "57014", // query_canceled: statement_timeout
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutting down, not yet up
			pgErr.Code == "25P03", // idle_in_transaction_session_timeout
			pgErr.Code == "25006", // read_only_sql_transaction: a standby, or a primary demoted by a failover
			pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errConnClosed(err)
}

// errConnClosed reports pgx's "conn closed", which has no exported sentinel.
func errConnClosed(err error) bool { return strings.Contains(err.Error(), "conn closed") }
