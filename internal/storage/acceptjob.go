package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// OperationJob is the queue's job row of an operation, as River's own insert
// would write it (process.Queue.OperationJob builds it): the single accept
// writes it in its own pipeline, so that BEGIN, the job, the instance, the
// operation and COMMIT are one round trip instead of two (River's InsertTx
// needs its answer before the accept's statements can go), and the accept
// pays nothing of River's insert path in Go.
type OperationJob struct {
	// Args is the job's encoded arguments.
	Args []byte
	Kind string
	// MaxAttempts, Priority and Queue are the job's insert options.
	MaxAttempts, Priority int16
	Queue                 string
	// UniqueKey and UniqueStates are River's uniqueness of the job (its
	// unique_key hash and unique_states bitmask): a job River would
	// refuse as a duplicate collides with this one too.
	UniqueKey    []byte
	UniqueStates int32
}

// OperationJobs is an Enqueuer that can describe an operation's job row;
// ok false makes the accept queue the operation through EnqueueTx.
type OperationJobs interface {
	OperationJob(operationID string) (job OperationJob, ok bool)
}

// insertNewInstanceOperationWithJobSQL is insertNewInstanceOperationSQL
// with the operation's job inserted in the same statement ($11–$17): the
// job's columns are River's (JobInsertFastMany's), its ID goes into
// job_id. An archived ID fails the operation's insert, and with it the
// job's. TestAcceptWritesRiversJobRow (internal/process) fails when River's
// row or river_job's columns change.
const insertNewInstanceOperationWithJobSQL = `WITH job AS (
	INSERT INTO river_job (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state,
		tags, unique_key, unique_states)
	VALUES ($11::jsonb, now(), $12::text, $13::smallint, '{}'::jsonb, $14::smallint, $15::text, now(), 'available',
		'{}'::varchar(255)[], $16::bytea, $17::integer::bit(8))
	RETURNING id)
INSERT INTO operations (operation_id, instance_id, type, state, description, stage, deadline, data, temporary,
	update_request, job_id)
	SELECT $1::text,
		CASE WHEN EXISTS (SELECT 1 FROM instances_archive WHERE instance_id = $2) THEN NULL ELSE $2::text END,
		$3::text, $4::text, $5::text, $6::text, $7::timestamptz, $8::jsonb, $9::boolean, $10::jsonb, job.id
	FROM job`

// jobNotifySQL is River's insert notification (PGNotifyMany): a worker
// listening anywhere fetches the new job at once rather than at its next
// poll. Sent inside the transaction, it is delivered only if it commits.
const jobNotifySQL = `SELECT pg_notify(current_schema() || '.river_insert', $1::text)`

// jobNotifyCooldown is River's FetchCooldown, the least time between two
// insert notifications of one client (River's default).
const jobNotifyCooldown = 100 * time.Millisecond

// jobNotifier sends at most one insert notification per jobNotifyCooldown,
// as River's client does for the jobs it inserts.
type jobNotifier struct{ last atomic.Int64 }

// due reports whether a notification should go with the job inserted now,
// and books it.
func (n *jobNotifier) due(now time.Time) bool {
	last := n.last.Load()
	if now.UnixNano()-last < int64(jobNotifyCooldown) {
		return false
	}
	return n.last.CompareAndSwap(last, now.UnixNano())
}

// acceptCommitMargin is how long before the request's deadline the accept
// transaction must reach its last statement on PostgreSQL's clock to
// commit: room for the COMMIT and its answer to reach keb before keb gives
// up on it, and for the clocks of keb's and PostgreSQL's hosts to differ.
const acceptCommitMargin = 500 * time.Millisecond

// acceptDeadlineSQL fails the transaction when PostgreSQL reaches it after
// $1: a one-round-trip accept sends COMMIT before it knows whether its
// statements ran, and a database that froze after receiving them runs them
// whenever it thaws, long after keb answered the PUT 503. The failing
// statement makes PostgreSQL skip the COMMIT behind it. clock_timestamp()
// is read when the statement runs (now() would be the transaction's start),
// and being volatile it keeps the planner from evaluating the failing cast
// ahead of time.
const acceptDeadlineSQL = `SELECT CASE WHEN clock_timestamp() < $1::timestamptz THEN 0
	ELSE ('` + acceptDeadlineMark + ` ' || clock_timestamp()::text)::int END`

// acceptDeadlineMark names acceptDeadlineSQL's failure in its error text.
const acceptDeadlineMark = "keb accept deadline passed at"

// errAcceptDeadline is an accept that reached its deadline guard too late:
// nothing was committed, and the request is answered 503.
var errAcceptDeadline = fmt.Errorf("the accept reached PostgreSQL too close to its deadline; nothing committed: %w",
	context.DeadlineExceeded)

// acceptDeadlineFailed tells acceptDeadlineSQL's failure.
func acceptDeadlineFailed(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "22P02" && strings.Contains(pgErr.Message, acceptDeadlineMark)
}

// queueAcceptJob queues the statements that write op's job with op itself
// (insertNewInstanceOperationWithJobSQL), River's insert notification when
// due, and the deadline guard, and returns true; false when the enqueuer
// cannot describe the job, and the accept queues it through EnqueueTx.
func (s *Store) queueAcceptJob(ctx context.Context, b *pgx.Batch, op Operation) bool {
	jobs, ok := s.enqueuer.(OperationJobs)
	if !ok {
		return false
	}
	job, ok := jobs.OperationJob(op.ID)
	if !ok {
		return false
	}
	b.Queue(insertNewInstanceOperationWithJobSQL, append(operationArgs(op),
		job.Args, job.Kind, job.MaxAttempts, job.Priority, job.Queue, job.UniqueKey, job.UniqueStates)...)
	if s.jobNotify.due(time.Now()) {
		b.Queue(jobNotifySQL, fmt.Sprintf(`{"queue": %q}`, job.Queue))
	}
	queueAcceptDeadline(ctx, b)
	return true
}

// queueAcceptDeadline queues acceptDeadlineSQL, last before the COMMIT,
// when ctx has a deadline.
func queueAcceptDeadline(ctx context.Context, b *pgx.Batch) {
	if d, ok := ctx.Deadline(); ok {
		b.Queue(acceptDeadlineSQL, d.Add(-acceptCommitMargin))
	}
}
