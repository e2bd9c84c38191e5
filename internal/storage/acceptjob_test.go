package storage_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// riverJobColumns are river_job's columns as of the River version whose row
// the single accept writes itself (insertNewInstanceOperationWithJobSQL).
var riverJobColumns = []string{"args", "attempt", "attempted_at", "attempted_by", "created_at", "errors",
	"finalized_at", "id", "kind", "max_attempts", "metadata", "priority", "queue", "scheduled_at", "state", "tags",
	"unique_key", "unique_states"}

// TestAcceptWritesRiversJobRow checks the job row a single accept writes
// itself against River's: River's own insert of the same operation finds it
// a duplicate (same unique key and states), River's row of another
// operation differs from it only where two jobs must, river_job has the
// columns the accept knows of, and River works the job. It fails when a
// River upgrade changes its row or its table: update the accept's job
// insert with it.
func TestAcceptWritesRiversJobRow(t *testing.T) {
	f := newFixture(t, nil)
	q := kebQueue(t, f)
	f.store = storage.NewStore(f.pool, f.cipher, q)
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	if err := f.store.CreateProvisioning(ctx, newInstance("rj-1", "ga-rj", "azure"), newOperation("op-rj-1", "rj-1", storage.OperationTypeProvision)); err != nil {
		t.Fatal(err)
	}
	var jobID int64
	if err := f.pool.QueryRow(f.ctx, `SELECT job_id FROM operations WHERE operation_id = 'op-rj-1'`).Scan(&jobID); err != nil {
		t.Fatal(err)
	}

	var columns []string
	rows, _ := f.pool.Query(f.ctx, `SELECT column_name FROM information_schema.columns WHERE table_name = 'river_job' AND table_schema = current_schema()`)
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		columns = append(columns, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(columns)
	if !slices.Equal(columns, riverJobColumns) {
		t.Errorf("river_job's columns are %v, the accept writes a row of %v: River's schema changed", columns, riverJobColumns)
	}

	tx, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(f.ctx) }()
	again, err := q.EnqueueTx(f.ctx, tx, "op-rj-1")
	if err != nil {
		t.Fatal(err)
	}
	if again != jobID {
		t.Errorf("River's insert of the accepted operation queued job %d beside the accept's %d: its unique key or states differ", again, jobID)
	}
	other, err := q.EnqueueTx(f.ctx, tx, "op-rj-other")
	if err != nil {
		t.Fatal(err)
	}
	// Every column but the job's identity and its times, as River's insert
	// of another operation wrote them.
	const row = `SELECT to_jsonb(j) - 'id' - 'args' - 'unique_key' - 'created_at' - 'scheduled_at' FROM river_job j WHERE id = $1`
	var kebRow, riverRow string
	if err := tx.QueryRow(f.ctx, row, jobID).Scan(&kebRow); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(f.ctx, row, other).Scan(&riverRow); err != nil {
		t.Fatal(err)
	}
	if kebRow != riverRow {
		t.Errorf("the accept's job row differs from River's:\n accept %s\n River  %s", kebRow, riverRow)
	}
	var argsEqual bool
	if err := tx.QueryRow(f.ctx, `SELECT a.args = jsonb_build_object('operation_id', 'op-rj-1') AND b.args = jsonb_build_object('operation_id', 'op-rj-other')
		FROM river_job a, river_job b WHERE a.id = $1 AND b.id = $2`, jobID, other).Scan(&argsEqual); err != nil {
		t.Fatal(err)
	}
	if !argsEqual {
		t.Error("the accept's job args are not River's encoding of the operation")
	}
	_ = tx.Rollback(f.ctx)

	// River works it.
	worked := make(chan string, 1)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, job *river.Job[process.OperationArgs]) error {
		worked <- job.Args.OperationID
		return nil
	}))
	client, err := river.NewClient(riverpgxv5.New(f.pool), &river.Config{Workers: workers,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}}, Logger: nil})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(f.ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Stop(context.Background()) }()
	select {
	case id := <-worked:
		if id != "op-rj-1" {
			t.Errorf("River worked operation %s, want op-rj-1", id)
		}
	case <-time.After(time.Minute):
		t.Fatal("River did not work the accept's job within a minute")
	}
}

// kebQueue is keb's River queue over f's database, inserting only.
func kebQueue(t *testing.T, f *fixture) *process.Queue {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	q, err := process.NewQueue(f.pool, process.QueueConfig{}, log)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// deadlineOnly has a deadline but is never cancelled: what a request whose
// deadline passed looks like to a PostgreSQL that only now runs its
// statements (a database frozen with them in hand), without pgx giving up
// first.
type deadlineOnly struct {
	context.Context
	deadline time.Time
}

func (d deadlineOnly) Deadline() (time.Time, bool) { return d.deadline, true }

// TestAcceptPastItsDeadlineCommitsNothing: an accept whose statements reach
// PostgreSQL within the commit margin of its deadline (or after it) commits
// nothing, and its error is the database's unavailability (503), not the
// request's.
func TestAcceptPastItsDeadlineCommitsNothing(t *testing.T) {
	f := newFixture(t, nil)
	q := kebQueue(t, f)
	for _, enq := range []struct {
		name string
		q    storage.Enqueuer
	}{{"its own job row", q}, {"River's insert", riverOnly{q}}} {
		f.store = storage.NewStore(f.pool, f.cipher, enq.q)
		id := "late-" + strings.ReplaceAll(enq.name, " ", "-")
		ctx := deadlineOnly{Context: f.ctx, deadline: time.Now().Add(100 * time.Millisecond)}
		err := f.store.CreateProvisioning(ctx, newInstance(id, "ga-"+id, "azure"), newOperation("op-"+id, id, storage.OperationTypeProvision))
		if err == nil || !storage.Unavailable(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: an accept past its deadline returned %v; want the database's unavailability", enq.name, err)
		}
		if n := f.instances(id) + f.operations(id) + f.count(`SELECT count(*) FROM river_job WHERE args->>'operation_id' = $1`, "op-"+id); n != 0 {
			t.Errorf("%s: an accept past its deadline left %d rows behind", enq.name, n)
		}
	}
}

// riverOnly is keb's queue without its job rows: the accept queues through
// River's InsertTx.
type riverOnly struct{ *process.Queue }

func (riverOnly) OperationJob(string) (storage.OperationJob, bool) {
	return storage.OperationJob{}, false
}
