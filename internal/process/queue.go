package process

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivershared/uniquestates"
	"github.com/riverqueue/river/rivertype"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// OperationArgs is the queue entry of an operation: its ID only, never data.
type OperationArgs struct {
	OperationID string `json:"operation_id" river:"unique"`
}

// Kind is stored in every queued job: renaming it orphans jobs already in the
// queue. Never rename it.
func (OperationArgs) Kind() string { return "keb_operation" }

// InsertOpts makes one job per operation, and lets it be snoozed and retried
// for as long as the operation's own deadline allows.
func (OperationArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 10000, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// OrchestrationArgs is the queue entry of an orchestration's scheduler: its
// ID only. One job per orchestration is queued or running at a time.
type OrchestrationArgs struct {
	OrchestrationID string `json:"orchestration_id" river:"unique"`
}

// Kind is stored in every queued job: never rename it.
func (OrchestrationArgs) Kind() string { return "keb_orchestration" }

// InsertOpts keeps one unfinished job per orchestration (a retried
// orchestration gets a new one after its first completed) and lets it be
// snoozed for as long as the orchestration runs.
func (OrchestrationArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 10000, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: unfinished}}
}

// unfinished are the job states uniqueness counts for jobs that may run
// again once finished (River's default also counts completed jobs, which
// would block every run after the first until River deletes the old job).
var unfinished = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled}

// Scheduler runs one pass of an orchestration's scheduler; RetryAfter zero
// means the orchestration has ended.
type Scheduler interface {
	Advance(ctx context.Context, orchestrationID string) (retryAfter time.Duration, err error)
}

type orchestrationWorker struct {
	river.WorkerDefaults[OrchestrationArgs]
	scheduler Scheduler
	timeout   time.Duration
}

func (w *orchestrationWorker) Work(ctx context.Context, job *river.Job[OrchestrationArgs]) error {
	after, err := w.scheduler.Advance(ctx, job.Args.OrchestrationID)
	if err != nil {
		return fmt.Errorf("scheduling orchestration %s: %w", job.Args.OrchestrationID, err)
	}
	if after > 0 {
		return river.JobSnooze(after)
	}
	return nil
}

func (w *orchestrationWorker) Timeout(*river.Job[OrchestrationArgs]) time.Duration { return w.timeout }

// Orchestrate hands the queue's orchestration jobs to s. Call it once,
// before Start, on a queue built with workers.
func (q *Queue) Orchestrate(s Scheduler) error {
	if q.workers == nil {
		return errors.New("the work queue was built without workers (APP_WORKERS=0): it only inserts")
	}
	if err := river.AddWorkerSafely(q.workers, &orchestrationWorker{scheduler: s, timeout: q.cfg.JobTimeout}); err != nil {
		return fmt.Errorf("registering the orchestration worker: %w", err)
	}
	return nil
}

// EnqueueOrchestrationTx queues an orchestration's scheduler inside the
// transaction that writes (or retries) the orchestration.
func (q *Queue) EnqueueOrchestrationTx(ctx context.Context, tx pgx.Tx, orchestrationID string) (int64, error) {
	res, err := q.client.InsertTx(ctx, tx, OrchestrationArgs{OrchestrationID: orchestrationID}, nil)
	if err != nil {
		return 0, fmt.Errorf("queueing orchestration: %w", err)
	}
	return res.Job.ID, nil
}

// QueueConfig tunes the workers of one replica.
type QueueConfig struct {
	// Workers is how many operations this replica works on at once; 0
	// makes an insert-only queue (the replica accepts but never works).
	Workers int
	// JobTimeout bounds one run of an operation's steps.
	JobTimeout time.Duration
	// RescueAfter is how long a job may look running before River hands it
	// to another replica: the bound on taking over a killed replica's work.
	RescueAfter time.Duration
	// PollInterval is how often idle workers look for work they were not
	// notified of (scheduled jobs coming due).
	PollInterval time.Duration
}

// Periodic is a housekeeping job (trial expiry, cleanups) run every Interval,
// and once when a replica becomes leader. River's elected leader schedules
// it and uniqueness keeps one run at a time, whatever the number of
// replicas.
type Periodic struct {
	// Name identifies the job in the queue: never rename one.
	Name     string
	Interval time.Duration
	Run      func(ctx context.Context) error
}

// PeriodicArgs is the queue entry of a periodic job.
type PeriodicArgs struct {
	Name string `json:"name" river:"unique"`
}

// Kind is stored in every queued job: never rename it.
func (PeriodicArgs) Kind() string { return "keb_periodic" }

// InsertOpts keeps one job per name queued or running, so a slow run is not
// overtaken by the next, and gives up on a failed run after a few tries: the
// next interval runs it anyway. Finished jobs are left out of the uniqueness
// states (River's default counts completed ones, which would block every run
// after the first until River deletes the old job).
func (PeriodicArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: unfinished}}
}

type periodicWorker struct {
	river.WorkerDefaults[PeriodicArgs]
	jobs    map[string]Periodic
	timeout time.Duration
}

func (w *periodicWorker) Work(ctx context.Context, job *river.Job[PeriodicArgs]) error {
	p, ok := w.jobs[job.Args.Name]
	if !ok {
		// A job of a name this version does not know (left by an older or
		// newer replica): drop it.
		return river.JobCancel(fmt.Errorf("unknown periodic job %q", job.Args.Name))
	}
	if err := p.Run(ctx); err != nil {
		return fmt.Errorf("periodic job %s: %w", p.Name, err)
	}
	return nil
}

func (w *periodicWorker) Timeout(*river.Job[PeriodicArgs]) time.Duration { return w.timeout }

// Queue is keb's durable work queue (River, in PostgreSQL). One River client
// per replica both inserts (inside the transactions that accept operations)
// and, once Work has handed it the engine, works the jobs.
type Queue struct {
	client  *river.Client[pgx.Tx]
	workers *river.Workers
	cfg     QueueConfig
	// working is set by Work: the queue has an engine and workers to run.
	working bool
}

var (
	_ storage.Enqueuer      = (*Queue)(nil)
	_ storage.OperationJobs = (*Queue)(nil)
)

// OperationJob is the job row River's InsertTx would write for the
// operation (JobInsertFastMany's columns), so that the single accept writes
// it in its own pipeline, one round trip instead of two. The unique key is
// River's: the hash of the kind and the args' unique fields (OperationArgs
// has one, operation_id, so they are the whole encoded args). It describes
// no notification: the store sends River's, paced as River paces it.
// TestAcceptWritesRiversJobRow checks the row against River's own insert.
func (q *Queue) OperationJob(operationID string) (storage.OperationJob, bool) {
	args := OperationArgs{OperationID: operationID}
	encoded, err := json.Marshal(args)
	if err != nil {
		return storage.OperationJob{}, false
	}
	opts := args.InsertOpts()
	key := sha256.Sum256([]byte("&kind=" + args.Kind() + "&args=" + string(encoded)))
	return storage.OperationJob{
		Args:         encoded,
		Kind:         args.Kind(),
		MaxAttempts:  int16(opts.MaxAttempts),
		Priority:     river.PriorityDefault,
		Queue:        river.QueueDefault,
		UniqueKey:    key[:],
		UniqueStates: int32(uniquestates.UniqueStatesToBitmask(rivertype.UniqueOptsByStateDefault())),
	}, true
}

type operationWorker struct {
	river.WorkerDefaults[OperationArgs]
	engine  *Engine
	timeout time.Duration
}

// Work hands an operation to the engine and turns its outcome into River's
// terms: a wait is a snooze, which releases the worker and costs no attempt.
func (w *operationWorker) Work(ctx context.Context, job *river.Job[OperationArgs]) error {
	out, err := w.engine.Process(ctx, job.Args.OperationID)
	if err != nil {
		return fmt.Errorf("processing operation %s: %w", job.Args.OperationID, err)
	}
	if out.RetryAfter > 0 {
		return river.JobSnooze(out.RetryAfter)
	}
	return nil
}

func (w *operationWorker) Timeout(*river.Job[OperationArgs]) time.Duration { return w.timeout }

// NewQueue builds the queue's River client. With cfg.Workers 0 it only
// inserts; otherwise Work must hand it the engine before Start. The store
// needs the queue to accept operations and the engine needs the store, so
// the engine comes second.
func NewQueue(pool *pgxpool.Pool, cfg QueueConfig, log logrus.FieldLogger) (*Queue, error) {
	rc := &river.Config{Logger: logging.Slog(log.WithField("component", "queue"), slog.LevelWarn), ID: ClientID()}
	q := &Queue{cfg: cfg}
	if cfg.Workers > 0 {
		q.workers = river.NewWorkers()
		rc.Workers = q.workers
		rc.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}}
		rc.JobTimeout = cfg.JobTimeout
		rc.RescueStuckJobsAfter = cfg.RescueAfter
		rc.RetryPolicy = boundedRetry{max: 30 * time.Second}
		if cfg.PollInterval > 0 {
			rc.FetchPollInterval = cfg.PollInterval
		}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		return nil, fmt.Errorf("creating work queue: %w", err)
	}
	q.client = client
	return q, nil
}

// Work hands the queue's operation jobs to engine and schedules the periodic
// jobs. Call it once, before Start, on a queue built with workers.
func (q *Queue) Work(engine *Engine, periodic ...Periodic) error {
	if q.workers == nil {
		return errors.New("the work queue was built without workers (APP_WORKERS=0): it only inserts")
	}
	if q.working {
		return errors.New("the work queue already has an engine")
	}
	if err := river.AddWorkerSafely(q.workers, &operationWorker{engine: engine, timeout: q.cfg.JobTimeout}); err != nil {
		return fmt.Errorf("registering the operation worker: %w", err)
	}
	jobs := &periodicWorker{jobs: map[string]Periodic{}, timeout: q.cfg.JobTimeout}
	if err := river.AddWorkerSafely(q.workers, jobs); err != nil {
		return fmt.Errorf("registering the periodic worker: %w", err)
	}
	scheduled := make([]*river.PeriodicJob, 0, len(periodic))
	for _, p := range periodic {
		jobs.jobs[p.Name] = p
		args := PeriodicArgs{Name: p.Name}
		scheduled = append(scheduled, river.NewPeriodicJob(river.PeriodicInterval(p.Interval),
			func() (river.JobArgs, *river.InsertOpts) { return args, nil },
			&river.PeriodicJobOpts{ID: p.Name, RunOnStart: true}))
	}
	if _, err := q.client.PeriodicJobs().AddManySafely(scheduled); err != nil {
		return fmt.Errorf("scheduling periodic jobs: %w", err)
	}
	q.working = true
	return nil
}

// EnqueueTx queues an operation inside the transaction that writes it, so
// the job exists exactly when the operation does, and returns the job's ID.
func (q *Queue) EnqueueTx(ctx context.Context, tx pgx.Tx, operationID string) (int64, error) {
	res, err := q.client.InsertTx(ctx, tx, OperationArgs{OperationID: operationID}, nil)
	if err != nil {
		return 0, fmt.Errorf("queueing operation: %w", err)
	}
	return res.Job.ID, nil
}

// EnqueueManyTx queues several operations in one statement inside the
// transaction that writes them, and returns their jobs' IDs in the order of
// operationIDs. The jobs are matched to the operations by their arguments:
// SQL does not promise that RETURNING keeps the order of the rows given.
func (q *Queue) EnqueueManyTx(ctx context.Context, tx pgx.Tx, operationIDs []string) ([]int64, error) {
	params := make([]river.InsertManyParams, len(operationIDs))
	for i, id := range operationIDs {
		params[i] = river.InsertManyParams{Args: OperationArgs{OperationID: id}}
	}
	res, err := q.client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return nil, fmt.Errorf("queueing %d operations: %w", len(operationIDs), err)
	}
	byOperation := make(map[string]int64, len(res))
	for _, r := range res {
		var args OperationArgs
		if err := json.Unmarshal(r.Job.EncodedArgs, &args); err != nil {
			return nil, fmt.Errorf("reading queued job %d: %w", r.Job.ID, err)
		}
		byOperation[args.OperationID] = r.Job.ID
	}
	ids := make([]int64, len(operationIDs))
	for i, id := range operationIDs {
		jobID, ok := byOperation[id]
		if !ok {
			return nil, fmt.Errorf("the queue returned no job for operation %s", id)
		}
		ids[i] = jobID
	}
	return ids, nil
}

// Wake makes a waiting job available at once (a watch saw its runtime
// change). A running job is left alone: runningSince is then when that run
// began, so that the caller can tell whether the run may have missed the
// change; zero means the job is now due (or finished: nothing to wake).
func (q *Queue) Wake(ctx context.Context, jobID int64) (runningSince time.Time, err error) {
	row, err := q.client.JobRetry(ctx, jobID)
	if err != nil {
		return time.Time{}, fmt.Errorf("waking job %d: %w", jobID, err)
	}
	return wakeOutcome(row), nil
}

// wakeOutcome reads the job JobRetry returned: when the job's current run
// began, zero when it is due or finished.
//
// A job JobRetry did not make available is reported as running since long
// ago, so that the caller tries again. That happens when the run's end is
// recorded (River's completer snoozing the job) while JobRetry runs: its
// update sees the job running in its snapshot and skips it, and it returns
// the row as recorded since, waiting (scheduled) for a time ahead. A `make
// bench` pipeline lost about one wake-up in fifty this way, each costing its
// provisioning the 30 s poll.
func wakeOutcome(row *rivertype.JobRow) time.Time {
	switch row.State {
	case rivertype.JobStateAvailable, rivertype.JobStateCompleted, rivertype.JobStateCancelled, rivertype.JobStateDiscarded:
		return time.Time{}
	case rivertype.JobStateRunning:
		if row.AttemptedAt != nil {
			return *row.AttemptedAt
		}
	}
	// Not made due (or a running job without a start, which is not
	// expected): an old run, so that the caller tries again rather than
	// trusting it.
	return time.Unix(0, 0)
}

// Start starts the workers (a no-op for an insert-only queue or one Work was
// not called on). ctx only
// carries values: River treats the cancellation of its Start context as a
// hard stop that cancels running steps at once, so shutting down is Stop's
// job, never ctx's.
func (q *Queue) Start(ctx context.Context) error {
	if !q.working {
		return nil
	}
	if err := q.client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("starting workers: %w", err)
	}
	return nil
}

// Stop stops fetching work and lets running steps finish until ctx is done
// (the shutdown grace); steps still running then are cancelled, and their
// bookkeeping saves what they did. What is cut off is redone by another
// replica from the last checkpoint.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.working {
		return nil
	}
	err := q.client.Stop(ctx)
	if err == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if cerr := q.client.StopAndCancel(cctx); cerr != nil {
		return fmt.Errorf("cancelling steps still running after the shutdown grace: %w", cerr)
	}
	return fmt.Errorf("steps still running after the shutdown grace were cancelled: %w", err)
}

// ClientID names this replica's workers in the queue (river_job.attempted_by):
// host and PID, so an operator (or the fault suite) can tell which replica
// ran or is running a job.
func ClientID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return ClientIDOf(host, os.Getpid())
}

// ClientIDOf is the queue client ID of the replica with pid on host.
func ClientIDOf(host string, pid int) string { return fmt.Sprintf("keb-%s-%d", host, pid) }

// boundedRetry retries failed runs (the engine's own bookkeeping failed, or a
// replica died and its job was rescued) after 1s, 2s, 4s… capped at max.
// River's default grows as attempt⁴, which would park a rescued operation
// for minutes; the operation's own deadline is the real limit.
type boundedRetry struct{ max time.Duration }

func (b boundedRetry) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(backoff(len(job.Errors), b.max))
}
