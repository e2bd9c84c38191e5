package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/maintenance"
)

// OrchestrationState is where an orchestration is in its life. The values
// are stored: never rename one.
type OrchestrationState string

// Orchestration states.
const (
	OrchestrationPending    OrchestrationState = "pending"
	OrchestrationInProgress OrchestrationState = "in progress"
	OrchestrationCanceling  OrchestrationState = "canceling"
	OrchestrationCanceled   OrchestrationState = "canceled"
	OrchestrationSucceeded  OrchestrationState = "succeeded"
	OrchestrationFailed     OrchestrationState = "failed"
)

// OrchestrationStates are every state an orchestration can be filtered on.
var OrchestrationStates = []OrchestrationState{OrchestrationPending, OrchestrationInProgress, OrchestrationCanceling,
	OrchestrationCanceled, OrchestrationSucceeded, OrchestrationFailed}

// TargetState is where a runtime's entry in an orchestration is: the
// operation states, plus pending (not started yet), canceled (the
// orchestration was canceled before it started) and skipped (the runtime
// was not upgradable). The values are stored: never rename one.
type TargetState string

// Target states.
const (
	TargetPending    TargetState = "pending"
	TargetInProgress TargetState = TargetState(OperationInProgress)
	TargetSucceeded  TargetState = TargetState(OperationSucceeded)
	TargetFailed     TargetState = TargetState(OperationFailed)
	TargetCanceled   TargetState = "canceled"
	TargetSkipped    TargetState = "skipped"
)

// TargetStates are every state an orchestration's operation can be filtered on.
var TargetStates = []TargetState{TargetPending, TargetInProgress, TargetSucceeded, TargetFailed, TargetCanceled, TargetSkipped}

var (
	// ErrOrchestrationFinished means a cancel came after the orchestration ended.
	ErrOrchestrationFinished = errors.New("the orchestration has already finished")
	// ErrNothingToRetry means a retry of an orchestration that did not fail.
	ErrNothingToRetry = errors.New("the orchestration has no failed operations to retry")
)

// Orchestration is an operator's request to upgrade a set of runtimes.
type Orchestration struct {
	ID          string             `db:"orchestration_id"`
	Type        OperationType      `db:"type"`
	State       OrchestrationState `db:"state"`
	Description string             `db:"description"`
	Parameters  json.RawMessage    `db:"parameters"`
	ResolvedAt  *time.Time         `db:"resolved_at"`
	JobID       *int64             `db:"job_id"`
	CreatedAt   time.Time          `db:"created_at"`
	UpdatedAt   time.Time          `db:"updated_at"`
	FinishedAt  *time.Time         `db:"finished_at"`
}

const orchestrationColumns = `orchestration_id, type, state, description, parameters, resolved_at, job_id,
	created_at, updated_at, finished_at`

// Target is one runtime of an orchestration's frozen list, with the
// operation that upgrades (or upgraded) it.
type Target struct {
	OrchestrationID        string      `db:"orchestration_id"`
	InstanceID             string      `db:"instance_id"`
	OperationID            string      `db:"operation_id"`
	Position               int         `db:"position"`
	State                  TargetState `db:"state"`
	Description            string      `db:"description"`
	RuntimeID              string      `db:"runtime_id"`
	GlobalAccountID        string      `db:"global_account_id"`
	SubAccountID           string      `db:"subaccount_id"`
	PlanID                 string      `db:"plan_id"`
	PlanName               string      `db:"plan_name"`
	Region                 string      `db:"region"`
	ShootName              string      `db:"shoot_name"`
	MaintenanceWindowBegin string      `db:"maintenance_window_begin"`
	MaintenanceWindowEnd   string      `db:"maintenance_window_end"`
	NotBefore              time.Time   `db:"not_before"`
	Attempt                int         `db:"attempt"`
	PreviousOperationIDs   []string    `db:"previous_operation_ids"`
	CreatedAt              time.Time   `db:"created_at"`
	UpdatedAt              time.Time   `db:"updated_at"`
}

const targetColumns = `orchestration_id, instance_id, operation_id, position, state, description, runtime_id,
	global_account_id, subaccount_id, plan_id, plan_name, region, shoot_name, maintenance_window_begin,
	maintenance_window_end, not_before, attempt, previous_operation_ids, created_at, updated_at`

// Selector picks runtimes: its set fields are ANDed; All matches every runtime.
type Selector struct {
	All             bool
	GlobalAccountID string
	SubAccountID    string
	RuntimeID       string
	PlanName        string
	Region          string
	Shoot           string
}

// OrchestrationQueue queues orchestrations' scheduler jobs, and operations.
type OrchestrationQueue interface {
	Enqueuer
	EnqueueOrchestrationTx(ctx context.Context, tx pgx.Tx, orchestrationID string) (int64, error)
	Wake(ctx context.Context, jobID int64) (runningSince time.Time, err error)
}

// Orchestrations reads and writes orchestrations and their targets.
type Orchestrations struct {
	pool  *pgxpool.Pool
	queue OrchestrationQueue
}

// NewOrchestrations returns the orchestration store over pool; queue may be
// nil only for reading.
func NewOrchestrations(pool *pgxpool.Pool, queue OrchestrationQueue) *Orchestrations {
	return &Orchestrations{pool: pool, queue: queue}
}

// Create writes a pending orchestration and its scheduler job in one
// transaction.
func (s *Orchestrations) Create(ctx context.Context, o Orchestration) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO orchestrations (orchestration_id, type, state, description, parameters)
			VALUES ($1, $2, $3, $4, $5)`, o.ID, o.Type, OrchestrationPending, o.Description, jsonOrEmpty(o.Parameters)); err != nil {
			return fmt.Errorf("inserting orchestration: %w", err)
		}
		return s.enqueue(ctx, tx, o.ID)
	})
}

func (s *Orchestrations) enqueue(ctx context.Context, tx pgx.Tx, id string) error {
	jobID, err := s.queue.EnqueueOrchestrationTx(ctx, tx, id)
	if err != nil {
		return fmt.Errorf("queueing orchestration %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE orchestrations SET job_id = $2 WHERE orchestration_id = $1`, id, jobID); err != nil {
		return fmt.Errorf("linking orchestration %s to job %d: %w", id, jobID, err)
	}
	return nil
}

// Get returns one orchestration.
func (s *Orchestrations) Get(ctx context.Context, id string) (Orchestration, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+orchestrationColumns+` FROM orchestrations WHERE orchestration_id = $1`, id)
	o, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Orchestration])
	return o, interpretError(err)
}

// List returns a page (1-based) of orchestrations, newest first, in the
// given states (all when empty), and the total.
func (s *Orchestrations) List(ctx context.Context, states []OrchestrationState, page, pageSize int) ([]Orchestration, int, error) {
	where, args := "", []any{}
	if len(states) > 0 {
		where, args = " WHERE state = ANY($1::text[])", append(args, states)
	}
	var out []Orchestration
	var total int
	err := pgx.BeginTxFunc(ctx, s.pool, RuntimesTxOptions, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+orchestrationColumns+` FROM orchestrations`+where+
			` ORDER BY created_at DESC, orchestration_id DESC`+limitOffset(page, pageSize), args...)
		var err error
		if out, err = pgx.CollectRows(rows, pgx.RowToStructByName[Orchestration]); err != nil {
			return fmt.Errorf("listing orchestrations: %w", err)
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM orchestrations`+where, args...).Scan(&total)
	})
	return out, total, err
}

func limitOffset(page, pageSize int) string {
	if page < 1 {
		page = 1
	}
	return " LIMIT " + strconv.Itoa(pageSize) + " OFFSET " + strconv.Itoa((page-1)*pageSize)
}

// Targets returns a page of an orchestration's runtimes in list order, in
// the given states (all when empty), and the total.
func (s *Orchestrations) Targets(ctx context.Context, id string, states []TargetState, page, pageSize int) ([]Target, int, error) {
	where, args := " WHERE orchestration_id = $1", []any{id}
	if len(states) > 0 {
		where, args = where+" AND state = ANY($2::text[])", append(args, states)
	}
	var out []Target
	var total int
	err := pgx.BeginTxFunc(ctx, s.pool, RuntimesTxOptions, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+targetColumns+` FROM orchestration_operations`+where+
			` ORDER BY position`+limitOffset(page, pageSize), args...)
		var err error
		if out, err = pgx.CollectRows(rows, pgx.RowToStructByName[Target]); err != nil {
			return fmt.Errorf("listing operations of orchestration %s: %w", id, err)
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM orchestration_operations`+where, args...).Scan(&total)
	})
	return out, total, err
}

// Target returns one operation of an orchestration, by its current or an
// earlier attempt's operation ID, with the instance operation it started
// (nil while pending, skipped or canceled).
func (s *Orchestrations) Target(ctx context.Context, orchestrationID, operationID string) (Target, *Operation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+targetColumns+` FROM orchestration_operations
		WHERE orchestration_id = $1 AND (operation_id = $2 OR $2 = ANY(previous_operation_ids))`, orchestrationID, operationID)
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Target])
	if err != nil {
		return Target{}, nil, interpretError(err)
	}
	rows, _ = s.pool.Query(ctx, `SELECT `+operationColumns+` FROM operations WHERE operation_id = $1`, operationID)
	op, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Operation])
	if errors.Is(err, pgx.ErrNoRows) {
		return t, nil, nil
	}
	if err != nil {
		return Target{}, nil, fmt.Errorf("reading operation %s: %w", operationID, err)
	}
	return t, &op, nil
}

// Cancel stops an orchestration from starting more upgrades: a pending one
// is canceled at once, one in progress goes canceling (its scheduler cancels
// what has not started and ends it canceled once the running upgrades
// finish). Canceling a canceled or canceling one changes nothing.
func (s *Orchestrations) Cancel(ctx context.Context, id string) (Orchestration, error) {
	var o Orchestration
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+orchestrationColumns+` FROM orchestrations WHERE orchestration_id = $1 FOR UPDATE`, id)
		var err error
		if o, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Orchestration]); err != nil {
			return interpretError(err)
		}
		switch o.State {
		case OrchestrationCanceled, OrchestrationCanceling:
			return nil
		case OrchestrationSucceeded, OrchestrationFailed:
			return ErrOrchestrationFinished
		case OrchestrationPending:
			o.State, o.Description = OrchestrationCanceled, "Canceled before it started"
			if _, err := tx.Exec(ctx, `UPDATE orchestration_operations SET state = $2, updated_at = now()
				WHERE orchestration_id = $1 AND state = $3`, id, TargetCanceled, TargetPending); err != nil {
				return fmt.Errorf("canceling operations of orchestration %s: %w", id, err)
			}
		default:
			o.State, o.Description = OrchestrationCanceling, "Canceling: no more upgrades start; running ones finish"
		}
		return tx.QueryRow(ctx, `UPDATE orchestrations SET state = $2, description = $3, updated_at = now(),
			finished_at = CASE WHEN $2 = 'canceled' THEN now() END WHERE orchestration_id = $1 RETURNING updated_at`,
			id, o.State, o.Description).Scan(&o.UpdatedAt)
	})
	if err == nil && o.State == OrchestrationCanceling && o.JobID != nil {
		_, _ = s.queue.Wake(ctx, *o.JobID) // best effort: its next tick sees it anyway
	}
	return o, err
}

// Retry re-runs the failed operations of a failed orchestration as a new
// attempt: each gets a new operation ID (the old ones stay readable), and the
// orchestration goes pending again, to start when no other of its kind runs.
// It returns the new and the old operation IDs.
func (s *Orchestrations) Retry(ctx context.Context, id string) (retried, old []string, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var state OrchestrationState
		if err := tx.QueryRow(ctx, `SELECT state FROM orchestrations WHERE orchestration_id = $1 FOR UPDATE`, id).Scan(&state); err != nil {
			return interpretError(err)
		}
		if state != OrchestrationFailed {
			return ErrNothingToRetry
		}
		rows, err := tx.Query(ctx, `UPDATE orchestration_operations oo SET operation_id = gen_random_uuid()::text,
				state = $2, description = 'Retry: waiting to start', attempt = attempt + 1,
				previous_operation_ids = previous_operation_ids || oo.operation_id, not_before = now(), updated_at = now()
			FROM (SELECT instance_id, operation_id AS old_id FROM orchestration_operations
				WHERE orchestration_id = $1 AND state = $3 FOR UPDATE) f
			WHERE oo.orchestration_id = $1 AND oo.instance_id = f.instance_id
			RETURNING oo.operation_id, f.old_id`, id, TargetPending, TargetFailed)
		if err != nil {
			return fmt.Errorf("retrying operations of orchestration %s: %w", id, err)
		}
		for rows.Next() {
			var n, o string
			if err := rows.Scan(&n, &o); err != nil {
				rows.Close()
				return err
			}
			retried, old = append(retried, n), append(old, o)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("retrying operations of orchestration %s: %w", id, err)
		}
		if len(retried) == 0 {
			return ErrNothingToRetry
		}
		if _, err := tx.Exec(ctx, `UPDATE orchestrations SET state = $2, description = $3, updated_at = now(),
			finished_at = NULL WHERE orchestration_id = $1`, id, OrchestrationPending,
			fmt.Sprintf("Retrying %d failed operations", len(retried))); err != nil {
			return fmt.Errorf("retrying orchestration %s: %w", id, err)
		}
		return s.enqueue(ctx, tx, id)
	})
	return retried, old, err
}

// Schedule is how the scheduler starts an orchestration's upgrades.
type Schedule struct {
	// Include and Exclude select the targets (see Selector); exclude wins.
	Include, Exclude []Selector
	// Workers bounds the orchestration's upgrades in progress.
	Workers int
	// MaintenanceWindow starts each runtime's upgrade only inside its window.
	MaintenanceWindow bool
	// Windows resolves the window of runtimes provisioned without one.
	Windows maintenance.Config
	// NewOperation builds the upgrade operation of a target (ID, type,
	// deadline, data); Advance fills in the instance and the state.
	NewOperation func(t Target) (Operation, error)
}

// Progress is what one pass of the scheduler found and did.
type Progress struct {
	State OrchestrationState
	// Started counts the upgrades this pass started; Finished those it saw end.
	Started, Finished int
	// Running counts the upgrades in progress after the pass.
	Running int
	// NextDue is when the earliest pending upgrade may start (zero: none
	// pending).
	NextDue time.Time
	// Waiting means the orchestration is pending behind another of its kind.
	Waiting bool
}

// Done reports whether the orchestration has ended.
func (p Progress) Done() bool {
	switch p.State {
	case OrchestrationSucceeded, OrchestrationFailed, OrchestrationCanceled:
		return true
	}
	return false
}

// Advance runs one pass of an orchestration's scheduler in one transaction
// that holds the orchestration's row: it starts a pending orchestration
// when no other of its kind runs (resolving and freezing its targets the
// first time), records upgrades that ended, starts upgrades while fewer than
// Workers run, and ends the orchestration when nothing is left. Because every
// start happens under that row lock and counts the orchestration's running
// operations in the same transaction, Workers holds across replicas. Its
// number of statements does not depend on the number of targets.
func (s *Orchestrations) Advance(ctx context.Context, id string, now time.Time, sch Schedule) (Progress, error) {
	var p Progress
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		p = Progress{}
		rows, _ := tx.Query(ctx, `SELECT `+orchestrationColumns+` FROM orchestrations WHERE orchestration_id = $1 FOR UPDATE`, id)
		o, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Orchestration])
		if err != nil {
			return interpretError(err)
		}
		p.State = o.State
		if p.Done() {
			return nil
		}
		if o.State == OrchestrationPending {
			started, err := s.start(ctx, tx, o, now, sch)
			if err != nil || !started {
				p.Waiting = err == nil
				return err
			}
			p.State = OrchestrationInProgress
		}
		return s.pass(ctx, tx, o.ID, o.Type, now, sch, &p)
	})
	return p, err
}

// start moves a pending orchestration to in progress unless an earlier one
// of its kind is pending or one runs; the first time, it freezes the targets.
func (s *Orchestrations) start(ctx context.Context, tx pgx.Tx, o Orchestration, now time.Time, sch Schedule) (bool, error) {
	var ahead bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM orchestrations WHERE type = $1 AND orchestration_id <> $2
		AND (state IN ('in progress', 'canceling') OR (state = 'pending' AND (created_at, orchestration_id) < ($3, $2))))`,
		o.Type, o.ID, o.CreatedAt).Scan(&ahead); err != nil {
		return false, fmt.Errorf("looking for orchestrations ahead of %s: %w", o.ID, err)
	}
	if ahead {
		return false, nil
	}
	description := o.Description
	if o.ResolvedAt == nil {
		var err error
		if description, err = s.freeze(ctx, tx, o.ID, now, sch); err != nil {
			return false, err
		}
	}
	// The unique index admits one running orchestration per kind: a
	// concurrent start of another loses here and waits.
	_, err := tx.Exec(ctx, `SAVEPOINT start_orchestration`)
	if err != nil {
		return false, fmt.Errorf("starting orchestration %s: %w", o.ID, err)
	}
	_, err = tx.Exec(ctx, `UPDATE orchestrations SET state = $2, description = $3, resolved_at = coalesce(resolved_at, $4),
		updated_at = now() WHERE orchestration_id = $1`, o.ID, OrchestrationInProgress, description, now)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.ConstraintName == "orchestrations_one_running_per_type" {
		_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT start_orchestration`)
		return false, err
	}
	if err != nil {
		return false, fmt.Errorf("starting orchestration %s: %w", o.ID, err)
	}
	return true, nil
}

// freeze resolves the targets against the instances as they are now and
// writes them as the orchestration's operations: succeeded runtimes pending,
// the others (suspended, failed, being provisioned or deprovisioned) skipped.
func (s *Orchestrations) freeze(ctx context.Context, tx pgx.Tx, id string, now time.Time, sch Schedule) (string, error) {
	args := []any{id, TargetPending, TargetSkipped, RuntimeSucceeded}
	match := selectorsSQL(sch.Include, &args)
	where := "(" + match + ")"
	if len(sch.Exclude) > 0 {
		where += " AND NOT (" + selectorsSQL(sch.Exclude, &args) + ")"
	}
	rows, err := tx.Query(ctx, `INSERT INTO orchestration_operations (orchestration_id, instance_id, operation_id, position,
			state, description, runtime_id, global_account_id, subaccount_id, plan_id, plan_name, region, shoot_name,
			maintenance_window_begin, maintenance_window_end, not_before)
		SELECT $1, i.instance_id, gen_random_uuid()::text, row_number() OVER (ORDER BY i.created_at, i.instance_id),
			CASE WHEN i.state = $4 THEN $2 ELSE $3 END,
			CASE WHEN i.state = $4 THEN 'Waiting to start' ELSE 'Skipped: the runtime is ' || i.state END,
			i.runtime_id, i.global_account_id, i.subaccount_id, i.plan_id, i.plan_name, i.provider_region, i.shoot_name,
			i.maintenance_window_begin, i.maintenance_window_end, now()
		FROM instances i WHERE `+where+`
		RETURNING instance_id, state, plan_name, region, maintenance_window_begin, maintenance_window_end`, args...)
	if err != nil {
		return "", fmt.Errorf("resolving targets of orchestration %s: %w", id, err)
	}
	var ids, begins, ends []string
	var notBefore []time.Time
	pending, skipped := 0, 0
	for rows.Next() {
		var instanceID, plan, region, begin, end string
		var state TargetState
		if err := rows.Scan(&instanceID, &state, &plan, &region, &begin, &end); err != nil {
			rows.Close()
			return "", fmt.Errorf("resolving targets of orchestration %s: %w", id, err)
		}
		if state != TargetPending {
			skipped++
			continue
		}
		pending++
		w, ok := maintenance.FromStored(begin, end)
		if !ok {
			w = sch.Windows.Resolve(plan, region)
		}
		due := now
		if sch.MaintenanceWindow {
			due = w.Next(now)
		}
		ids, begins, ends, notBefore = append(ids, instanceID), append(begins, w.BeginClock()), append(ends, w.EndClock()),
			append(notBefore, due)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("resolving targets of orchestration %s: %w", id, err)
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE orchestration_operations oo SET maintenance_window_begin = u.b,
				maintenance_window_end = u.e, not_before = u.nb
			FROM unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[]) AS u(instance_id, b, e, nb)
			WHERE oo.orchestration_id = $1 AND oo.instance_id = u.instance_id`, id, ids, begins, ends, notBefore); err != nil {
			return "", fmt.Errorf("scheduling targets of orchestration %s: %w", id, err)
		}
	}
	d := fmt.Sprintf("Scheduled %d operations", pending)
	if skipped > 0 {
		d += fmt.Sprintf(" (skipped %d runtimes that are not in state succeeded)", skipped)
	}
	return d, nil
}

// selectorsSQL is the OR of the selectors, each the AND of its fields.
func selectorsSQL(sels []Selector, args *[]any) string {
	arg := func(v string) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args)) + "::text"
	}
	var ors []string
	for _, s := range sels {
		if s.All {
			ors = append(ors, "true")
			continue
		}
		var ands []string
		for _, f := range []struct{ col, v string }{
			{"i.global_account_id", s.GlobalAccountID}, {"i.subaccount_id", s.SubAccountID}, {"i.runtime_id", s.RuntimeID},
			{"i.plan_name", s.PlanName}, {"i.provider_region", s.Region}, {"i.shoot_name", s.Shoot},
		} {
			if f.v != "" {
				ands = append(ands, f.col+" = "+arg(f.v))
			}
		}
		if len(ands) == 0 {
			ands = append(ands, "false") // validation refuses empty selectors; never match on one
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	if len(ors) == 0 {
		return "false"
	}
	return strings.Join(ors, " OR ")
}

// pass records ended upgrades, starts new ones within the workers bound and
// ends the orchestration when nothing is left.
func (s *Orchestrations) pass(ctx context.Context, tx pgx.Tx, id string, opType OperationType, now time.Time, sch Schedule, p *Progress) error {
	// Upgrades that ended since the last pass. An operation that vanished
	// went with its instance (deprovisioned), which cannot happen while it
	// runs, but is counted failed rather than waited for forever.
	tag, err := tx.Exec(ctx, `UPDATE orchestration_operations oo SET state = coalesce(o.state, 'failed'),
			description = coalesce(o.description, 'The operation is gone with its instance'), updated_at = now()
		FROM orchestration_operations x LEFT JOIN operations o ON o.operation_id = x.operation_id
		WHERE x.orchestration_id = $1 AND x.state = $2 AND (o.state IS NULL OR o.state <> $2)
			AND oo.orchestration_id = x.orchestration_id AND oo.instance_id = x.instance_id`, id, TargetInProgress)
	if err != nil {
		return fmt.Errorf("recording finished upgrades of orchestration %s: %w", id, err)
	}
	p.Finished = int(tag.RowsAffected())
	if p.State == OrchestrationCanceling {
		if _, err := tx.Exec(ctx, `UPDATE orchestration_operations SET state = $2, description = 'Canceled before it started',
			updated_at = now() WHERE orchestration_id = $1 AND state = $3`, id, TargetCanceled, TargetPending); err != nil {
			return fmt.Errorf("canceling orchestration %s: %w", id, err)
		}
	}
	// Running is read from the targets as just synchronised, not from the
	// operations: an upgrade that finishes after the statement above is
	// still counted (which errs on the safe side of the workers bound), and
	// the orchestration never ends with a target left in progress.
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM orchestration_operations WHERE orchestration_id = $1 AND state = $2`,
		id, TargetInProgress).Scan(&p.Running); err != nil {
		return fmt.Errorf("counting upgrades of orchestration %s: %w", id, err)
	}
	if p.State == OrchestrationInProgress && p.Running < sch.Workers {
		if err := s.startUpgrades(ctx, tx, id, opType, now, sch, sch.Workers-p.Running, p); err != nil {
			return err
		}
	}
	var next *time.Time
	var pending int
	if err := tx.QueryRow(ctx, `SELECT min(not_before), count(*) FROM orchestration_operations
		WHERE orchestration_id = $1 AND state = $2`, id, TargetPending).Scan(&next, &pending); err != nil {
		return fmt.Errorf("reading pending upgrades of orchestration %s: %w", id, err)
	}
	if next != nil {
		p.NextDue = *next
	}
	if pending > 0 || p.Running > 0 {
		return nil
	}
	return s.finish(ctx, tx, id, p)
}

// startUpgrades starts up to free due upgrades, in list order. Each is
// inserted as its instance's operation only when the instance has none
// running (ON CONFLICT on operations_one_active_per_instance): a runtime
// busy with a PATCH's update stays pending for the next pass, and a PATCH or
// DELETE arriving after the insert finds the upgrade and gets 422.
func (s *Orchestrations) startUpgrades(ctx context.Context, tx pgx.Tx, id string, opType OperationType, now time.Time, sch Schedule, free int, p *Progress) error {
	// Runtimes gone or no longer succeeded since the list was frozen are
	// skipped, not upgraded.
	if _, err := tx.Exec(ctx, `UPDATE orchestration_operations oo SET state = $3, updated_at = now(),
			description = 'Skipped: the runtime is ' || coalesce(i.state, 'gone')
		FROM orchestration_operations x LEFT JOIN instances i ON i.instance_id = x.instance_id
		WHERE x.orchestration_id = $1 AND x.state = $2 AND x.not_before <= $5
			AND (i.instance_id IS NULL OR (i.state <> $4 AND i.state <> 'provisioning' AND i.state <> 'deprovisioning'))
			AND oo.orchestration_id = x.orchestration_id AND oo.instance_id = x.instance_id`,
		id, TargetPending, TargetSkipped, RuntimeSucceeded, now); err != nil {
		return fmt.Errorf("skipping runtimes of orchestration %s: %w", id, err)
	}
	// Candidates: due, in order, whose instance is free. Instances a PATCH or
	// DELETE holds locked right now are passed over (SKIP LOCKED).
	rows, _ := tx.Query(ctx, `SELECT `+prefixed("oo.", targetColumns)+` FROM orchestration_operations oo
		JOIN instances i ON i.instance_id = oo.instance_id
		WHERE oo.orchestration_id = $1 AND oo.state = $2 AND oo.not_before <= $3 AND i.state = $5
			AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.instance_id = oo.instance_id AND o.state = $6)
		ORDER BY oo.not_before, oo.position LIMIT $4 FOR UPDATE OF i SKIP LOCKED`,
		id, TargetPending, now, free, RuntimeSucceeded, OperationInProgress)
	cands, err := pgx.CollectRows(rows, pgx.RowToStructByName[Target])
	if err != nil {
		return fmt.Errorf("choosing upgrades of orchestration %s: %w", id, err)
	}
	var ops []Operation
	var later []string
	var laterAt []time.Time
	for _, t := range cands {
		if sch.MaintenanceWindow {
			// A window that closed while the runtime waited for a worker:
			// it waits for the next one.
			if w, ok := maintenance.FromStored(t.MaintenanceWindowBegin, t.MaintenanceWindowEnd); ok && !w.Contains(now) {
				later, laterAt = append(later, t.InstanceID), append(laterAt, w.Next(now))
				continue
			}
		}
		op, err := sch.NewOperation(t)
		if err != nil {
			return fmt.Errorf("building upgrade of runtime %s: %w", t.RuntimeID, err)
		}
		op.ID, op.InstanceID, op.Type, op.State = t.OperationID, t.InstanceID, opType, OperationInProgress
		ops = append(ops, op)
	}
	if len(later) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE orchestration_operations oo SET not_before = u.nb, updated_at = now()
			FROM unnest($2::text[], $3::timestamptz[]) AS u(instance_id, nb)
			WHERE oo.orchestration_id = $1 AND oo.instance_id = u.instance_id`, id, later, laterAt); err != nil {
			return fmt.Errorf("rescheduling upgrades of orchestration %s: %w", id, err)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	n := len(ops)
	opIDs, instIDs, types, descs, deadlines, datas := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]time.Time, n), make([]string, n)
	for i, op := range ops {
		opIDs[i], instIDs[i], types[i], descs[i], deadlines[i], datas[i] = op.ID, op.InstanceID, string(op.Type), op.Description,
			op.Deadline, string(jsonOrEmpty(op.Data))
	}
	rows, _ = tx.Query(ctx, `INSERT INTO operations (operation_id, instance_id, type, state, description, deadline, data,
			orchestration_id)
		SELECT u.id, u.instance_id, u.type, $7, u.description, u.deadline, u.data::jsonb, $8
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])
			AS u(id, instance_id, type, description, deadline, data)
		ON CONFLICT (instance_id) WHERE state = 'in progress' DO NOTHING
		RETURNING operation_id`, opIDs, instIDs, types, descs, deadlines, datas, OperationInProgress, id)
	started, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("starting upgrades of orchestration %s: %w", id, err)
	}
	jobIDs := make([]int64, len(started))
	for i, opID := range started {
		if jobIDs[i], err = s.queue.EnqueueTx(ctx, tx, opID); err != nil {
			return fmt.Errorf("queueing upgrade %s: %w", opID, err)
		}
	}
	// The upgrades' links to their jobs and the targets' states: two
	// statements for all of them.
	if _, err := tx.Exec(ctx, `UPDATE operations o SET job_id = u.job_id
		FROM unnest($1::text[], $2::bigint[]) AS u(operation_id, job_id) WHERE o.operation_id = u.operation_id`,
		started, jobIDs); err != nil {
		return fmt.Errorf("linking upgrades of orchestration %s to their jobs: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE orchestration_operations SET state = $2, description = 'Upgrade started',
		updated_at = now() WHERE orchestration_id = $1 AND operation_id = ANY($3::text[])`, id, TargetInProgress, started); err != nil {
		return fmt.Errorf("recording started upgrades of orchestration %s: %w", id, err)
	}
	p.Started = len(started)
	p.Running += len(started)
	return nil
}

func prefixed(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// finish ends an orchestration with nothing pending or running: canceled
// when it was canceling, failed when any upgrade failed, else succeeded.
func (s *Orchestrations) finish(ctx context.Context, tx pgx.Tx, id string, p *Progress) error {
	counts := map[TargetState]int{}
	rows, _ := tx.Query(ctx, `SELECT state, count(*) FROM orchestration_operations WHERE orchestration_id = $1 GROUP BY state`, id)
	var state TargetState
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { counts[state] = n; return nil }); err != nil {
		return fmt.Errorf("counting operations of orchestration %s: %w", id, err)
	}
	final := OrchestrationSucceeded
	switch {
	case p.State == OrchestrationCanceling:
		final = OrchestrationCanceled
	case counts[TargetFailed] > 0:
		final = OrchestrationFailed
	}
	total := 0
	for _, c := range counts {
		total += c
	}
	d := fmt.Sprintf("Finished %d operations: %d succeeded, %d failed, %d skipped", total, counts[TargetSucceeded],
		counts[TargetFailed], counts[TargetSkipped])
	if counts[TargetCanceled] > 0 {
		d += fmt.Sprintf(", %d canceled", counts[TargetCanceled])
	}
	if _, err := tx.Exec(ctx, `UPDATE orchestrations SET state = $2, description = $3, updated_at = now(), finished_at = now()
		WHERE orchestration_id = $1`, id, final, d); err != nil {
		return fmt.Errorf("finishing orchestration %s: %w", id, err)
	}
	p.State = final
	return nil
}

// WakeOrchestrationOf makes the scheduler of the orchestration that started
// an upgrade run now, so that a finished upgrade frees its worker without
// waiting for the scheduler's next poll. Best effort.
func (s *Orchestrations) WakeOrchestrationOf(ctx context.Context, orchestrationID string) {
	var jobID *int64
	if err := s.pool.QueryRow(ctx, `SELECT job_id FROM orchestrations WHERE orchestration_id = $1`, orchestrationID).Scan(&jobID); err != nil || jobID == nil {
		return
	}
	_, _ = s.queue.Wake(ctx, *jobID)
}
