package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// gatedQueue is keb's River queue with a gate: the accepts of operations
// named gated-… stop inside their transactions, in their jobs' insert, until
// the test opens the gate, so that the accepts started meanwhile queue up and
// go in one group transaction. It records the size of every multi-job insert.
type gatedQueue struct {
	*process.Queue
	entered  chan string
	gate     chan struct{}
	failMany error
	// ownRows lets the accepts that are not gated write their job rows
	// themselves (storage.OperationJobs); otherwise River writes every job.
	ownRows bool
	f       *fixture

	mu      sync.Mutex
	batches []int
}

func newGatedQueue(t *testing.T, f *fixture) *gatedQueue {
	t.Helper()
	gq := &gatedQueue{Queue: kebQueue(t, f), entered: make(chan string, storage.MaxAcceptsInFlight), gate: make(chan struct{}), f: f}
	f.store = storage.NewStore(f.pool, f.cipher, gq)
	return gq
}

func (q *gatedQueue) EnqueueTx(ctx context.Context, tx pgx.Tx, operationID string) (int64, error) {
	if strings.HasPrefix(operationID, "gated-") {
		q.entered <- operationID
		<-q.gate
	}
	return q.Queue.EnqueueTx(ctx, tx, operationID)
}

// OperationJob leaves gated accepts to EnqueueTx, where the gate is; with
// ownRows the others write their job rows themselves, as with keb's queue.
func (q *gatedQueue) OperationJob(operationID string) (storage.OperationJob, bool) {
	if !q.ownRows || strings.HasPrefix(operationID, "gated-") {
		return storage.OperationJob{}, false
	}
	return q.Queue.OperationJob(operationID)
}

func (q *gatedQueue) EnqueueManyTx(ctx context.Context, tx pgx.Tx, operationIDs []string) ([]int64, error) {
	q.mu.Lock()
	q.batches = append(q.batches, len(operationIDs))
	q.mu.Unlock()
	if q.failMany != nil {
		return nil, q.failMany
	}
	return q.Queue.EnqueueManyTx(ctx, tx, operationIDs)
}

func (q *gatedQueue) largestBatch() int {
	if q.ownRows {
		// The jobs of one transaction share its start time (now()).
		return q.f.count(`SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM river_job GROUP BY created_at) g`)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.batches) == 0 {
		return 0
	}
	return slices.Max(q.batches)
}

// acceptCase is one PUT's accept and the answer the single path gives it.
// Cases sharing a race group compete for one slot: exactly one of them is
// written, the others get wantErr.
type acceptCase struct {
	inst    storage.Instance
	opID    string
	wantErr error
	race    string
}

// holdInFlight starts as many gated accepts as run at once without queueing
// and waits until each is held in its transaction. Their outcomes come on
// the channel returned, once the gate opens.
func holdInFlight(t *testing.T, f *fixture, q *gatedQueue) (gated []storage.Instance, done chan error) {
	t.Helper()
	done = make(chan error, storage.MaxAcceptsInFlight)
	for i := range storage.MaxAcceptsInFlight {
		inst := newInstance(fmt.Sprintf("first-%d", i), fmt.Sprintf("ga-first-%d", i), "azure")
		gated = append(gated, inst)
		go func() {
			done <- f.store.CreateProvisioning(f.ctx, inst, newOperation("gated-"+inst.InstanceID, inst.InstanceID, storage.OperationTypeProvision))
		}()
	}
	for range storage.MaxAcceptsInFlight {
		select {
		case <-q.entered:
		case <-f.ctx.Done():
			t.Fatal("the gated accepts never reached their job inserts")
		}
	}
	return gated, done
}

// acceptTogether holds accepts in flight, starts cases meanwhile, waits
// until every case queues, and opens the gate: the cases then go as one
// batch (or, after a failed batch, singly). It returns each case's error and
// checks the held accepts were written.
func acceptTogether(t *testing.T, f *fixture, q *gatedQueue, cases []acceptCase) (errs []error) {
	t.Helper()
	gated, first := holdInFlight(t, f, q)
	errs = make([]error, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.store.CreateProvisioning(f.ctx, c.inst, newOperation(c.opID, c.inst.InstanceID, storage.OperationTypeProvision))
		}()
	}
	for f.store.WaitingAccepts() < len(cases) {
		if f.ctx.Err() != nil {
			t.Fatalf("only %d of %d accepts queued behind the one in flight", f.store.WaitingAccepts(), len(cases))
		}
		runtime.Gosched()
	}
	close(q.gate)
	wg.Wait()
	for _, inst := range gated {
		if err := <-first; err != nil {
			t.Fatalf("an accept held in flight: %v", err)
		}
		checkWritten(t, f, inst, "gated-"+inst.InstanceID, true)
	}
	return errs
}

// checkWritten asserts what a user of the instance would see: an accepted
// provisioning has its instance, exactly one operation (its own) and exactly
// one queued job that names it; a refused one left neither operation nor
// job behind.
func checkWritten(t *testing.T, f *fixture, inst storage.Instance, opID string, accepted bool) {
	t.Helper()
	jobs := f.count(`SELECT count(*) FROM river_job WHERE kind = 'keb_operation' AND args->>'operation_id' = $1`, opID)
	ops := f.count(`SELECT count(*) FROM operations WHERE operation_id = $1`, opID)
	if !accepted {
		if ops != 0 || jobs != 0 {
			t.Errorf("refused accept %s (%s) left %d operation(s) and %d job(s)", inst.InstanceID, opID, ops, jobs)
		}
		return
	}
	if ops != 1 || jobs != 1 {
		t.Errorf("accepted %s (%s) has %d operation(s) and %d job(s), want one each", inst.InstanceID, opID, ops, jobs)
	}
	if n := f.operations(inst.InstanceID); n != 1 {
		t.Errorf("accepted instance %s has %d operations, want 1", inst.InstanceID, n)
	}
	linked := f.count(`SELECT count(*) FROM operations o JOIN river_job j ON j.id = o.job_id
		WHERE o.operation_id = $1 AND j.args->>'operation_id' = $1`, opID)
	if linked != 1 {
		t.Errorf("operation %s is not written with its own job's ID", opID)
	}
	got, err := f.store.Instance(f.ctx, inst.InstanceID)
	if err != nil {
		t.Fatalf("Instance(%s): %v", inst.InstanceID, err)
	}
	if got.GlobalAccountID != inst.GlobalAccountID || got.PlanName != inst.PlanName ||
		string(got.Credentials) != string(inst.Credentials) || !sameJSON(got.Parameters, inst.Parameters) {
		t.Errorf("instance %s stored with global account %s, plan %s, credentials %s, parameters %s; want %s, %s, %s, %s",
			inst.InstanceID, got.GlobalAccountID, got.PlanName, got.Credentials, got.Parameters,
			inst.GlobalAccountID, inst.PlanName, inst.Credentials, inst.Parameters)
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestGroupCommitAnswersEachAcceptAsAlone(t *testing.T) {
	t.Parallel()
	t.Run("River's job inserts", func(t *testing.T) { t.Parallel(); groupCommitAnswersEachAcceptAsAlone(t, false) })
	t.Run("keb's job rows", func(t *testing.T) { t.Parallel(); groupCommitAnswersEachAcceptAsAlone(t, true) })
}

func groupCommitAnswersEachAcceptAsAlone(t *testing.T, ownRows bool) {
	f := newFixture(t, nil)
	q := newGatedQueue(t, f)
	q.ownRows = ownRows
	// Already there: a provisioning (re-sent below), a trial (a second one of
	// its global account is refused), and an archived ID.
	f.provision("taken", "ga-taken", "azure", "op-taken")
	f.provision("trial-old", "ga-trial", "trial", "op-trial-old")
	if err := f.store.ArchiveAndRemove(f.ctx, f.deprovisioningInstance()); err != nil {
		t.Fatalf("ArchiveAndRemove: %v", err)
	}

	var cases []acceptCase
	for i := range 40 {
		inst := newInstance(fmt.Sprintf("fresh-%02d", i), fmt.Sprintf("ga-fresh-%02d", i), "azure")
		if i%4 == 0 {
			inst.Credentials = []byte(fmt.Sprintf(`{"clientid":"c-%d","clientsecret":"s"}`, i))
		}
		cases = append(cases, acceptCase{inst: inst, opID: fmt.Sprintf("op-fresh-%02d", i)})
	}
	cases = append(cases,
		// The platform re-sends a PUT it got no answer to.
		acceptCase{inst: newInstance("taken", "ga-taken", "azure"), opID: "op-taken-again", wantErr: storage.ErrAlreadyExists},
		acceptCase{inst: newInstance("inst-1", "ga-1", "azure"), opID: "op-archived", wantErr: storage.ErrArchived},
		acceptCase{inst: newInstance("trial-new", "ga-trial", "trial"), opID: "op-trial-new", wantErr: storage.ErrOnePerGlobalAccount},
		// One-per-global-account is per plan: a free instance beside the trial is fine.
		acceptCase{inst: newInstance("free-1", "ga-trial", "free"), opID: "op-free-1"},
		// Two trials of one new global account in the same batch: one wins.
		acceptCase{inst: newInstance("trial-a", "ga-pair", "trial"), opID: "op-trial-a", wantErr: storage.ErrOnePerGlobalAccount, race: "ga-pair"},
		acceptCase{inst: newInstance("trial-b", "ga-pair", "trial"), opID: "op-trial-b", wantErr: storage.ErrOnePerGlobalAccount, race: "ga-pair"},
		// One instance ID PUT twice at once, identical: one is written, the
		// other finds it (the broker then answers with its operation).
		acceptCase{inst: newInstance("dup", "ga-dup", "azure"), opID: "op-dup-1", wantErr: storage.ErrAlreadyExists, race: "dup"},
		acceptCase{inst: newInstance("dup", "ga-dup", "azure"), opID: "op-dup-2", wantErr: storage.ErrAlreadyExists, race: "dup"},
	)
	// The same ID PUT twice at once with different parameters (the broker
	// answers the loser 409): the winner's parameters are the ones stored.
	conflicting := newInstance("dup-diff", "ga-dup", "azure")
	conflicting.Parameters = []byte(`{"name":"other"}`)
	cases = append(cases,
		acceptCase{inst: newInstance("dup-diff", "ga-dup", "azure"), opID: "op-dup-diff-1", wantErr: storage.ErrAlreadyExists, race: "dup-diff"},
		acceptCase{inst: conflicting, opID: "op-dup-diff-2", wantErr: storage.ErrAlreadyExists, race: "dup-diff"},
	)

	errs := acceptTogether(t, f, q, cases)

	winners := map[string]int{}
	for i, c := range cases {
		err := errs[i]
		switch {
		case c.race != "" && err == nil:
			winners[c.race]++
		case c.race != "" && errors.Is(err, c.wantErr):
		case c.race == "" && c.wantErr == nil && err != nil:
			t.Errorf("accept of %s: %v, want it written", c.inst.InstanceID, err)
		case c.race == "" && c.wantErr != nil && !errors.Is(err, c.wantErr):
			t.Errorf("accept of %s: %v, want %v", c.inst.InstanceID, err, c.wantErr)
		case c.race != "":
			t.Errorf("accept of %s (%s): %v, want it written or %v", c.inst.InstanceID, c.opID, err, c.wantErr)
		}
		checkWritten(t, f, c.inst, c.opID, err == nil)
	}
	for _, race := range []string{"ga-pair", "dup", "dup-diff"} {
		if winners[race] != 1 {
			t.Errorf("%d accepts of race %s written, want exactly 1", winners[race], race)
		}
	}
	// The fresh accepts went in one group transaction with the conflicting
	// ones, which did not stop them.
	if got := q.largestBatch(); got < 40 {
		t.Errorf("largest group transaction queued %d jobs, want the 40 fresh accepts and the conflicts' winners together", got)
	}
	if ownRows {
		// The group's job rows are River's (the held accepts' jobs River
		// inserted itself) in every column but the job's identity and times.
		if n := f.count(`SELECT count(DISTINCT to_jsonb(j) - 'id' - 'args' - 'unique_key' - 'created_at' - 'scheduled_at') FROM river_job j`); n != 1 {
			t.Errorf("the job rows differ in %d ways from each other; the group's must be River's", n)
		}
	}
	// Nothing else changed: the re-sent PUT's instance keeps its operation.
	if n := f.operations("taken"); n != 1 {
		t.Errorf("re-sent PUT left instance taken with %d operations, want 1", n)
	}
}

func TestGroupCommitFallsBackToSingleAccepts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	q := newGatedQueue(t, f)
	// The group transaction fails in its job insert: it rolls back and each
	// accept runs alone, and is written exactly once.
	q.failMany = errors.New("queue refused the batch")
	f.provision("taken", "ga-taken", "azure", "op-taken")
	cases := []acceptCase{
		{inst: newInstance("a", "ga-a", "azure"), opID: "op-a"},
		{inst: newInstance("b", "ga-b", "trial"), opID: "op-b"},
		{inst: newInstance("taken", "ga-taken", "azure"), opID: "op-taken-again", wantErr: storage.ErrAlreadyExists},
		{inst: newInstance("c", "ga-c", "azure"), opID: "op-c"},
	}
	errs := acceptTogether(t, f, q, cases)
	if q.largestBatch() < 3 {
		t.Fatalf("no group transaction was tried (multi-job inserts: %v)", q.batches)
	}
	for i, c := range cases {
		if !errors.Is(errs[i], c.wantErr) {
			t.Errorf("accept of %s: %v, want %v", c.inst.InstanceID, errs[i], c.wantErr)
		}
		checkWritten(t, f, c.inst, c.opID, errs[i] == nil)
	}
}

func TestCancelledWaitingAcceptWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	q := newGatedQueue(t, f)
	_, first := holdInFlight(t, f, q)
	// Two accepts queue behind the ones in flight; the platform gives up on
	// one of them before its turn.
	ctx, cancel := context.WithCancel(f.ctx)
	gaveUp := make(chan error, 1)
	stayed := make(chan error, 1)
	go func() {
		gaveUp <- f.store.CreateProvisioning(ctx, newInstance("gave-up", "ga-g", "azure"),
			newOperation("op-gave-up", "gave-up", storage.OperationTypeProvision))
	}()
	go func() {
		stayed <- f.store.CreateProvisioning(f.ctx, newInstance("stayed", "ga-s", "azure"),
			newOperation("op-stayed", "stayed", storage.OperationTypeProvision))
	}()
	for f.store.WaitingAccepts() < 2 {
		runtime.Gosched()
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiting accept: %v, want context.Canceled", err)
	}
	close(q.gate)
	for range storage.MaxAcceptsInFlight {
		if err := <-first; err != nil {
			t.Errorf("accept in flight: %v", err)
		}
	}
	if err := <-stayed; err != nil {
		t.Errorf("accept queued behind it: %v", err)
	}
	checkWritten(t, f, newInstance("gave-up", "ga-g", "azure"), "op-gave-up", false)
	if f.instances("gave-up") != 0 {
		t.Error("the cancelled accept's instance was written")
	}
	checkWritten(t, f, newInstance("stayed", "ga-s", "azure"), "op-stayed", true)
}
