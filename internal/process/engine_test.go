package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/storage"
)

// memStore is an in-memory operationStore for the engine's unit tests; the
// real store is exercised by the end-to-end tests.
type memStore struct {
	mu     sync.Mutex
	op     storage.Operation
	locked bool
	saves  int
	// saveErr, when set, fails SaveProgress without saving.
	saveErr error
}

func (m *memStore) Work(context.Context, string) (storage.Operation, storage.Instance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.op, storage.Instance{InstanceID: m.op.InstanceID}, nil
}

func (m *memStore) SaveProgress(_ context.Context, op storage.Operation) (*time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves++
	if m.saveErr != nil {
		return nil, false, m.saveErr
	}
	if m.op.State != storage.OperationInProgress {
		return nil, false, nil
	}
	woken := m.op.WokenAt
	m.op = op
	m.op.WokenAt = woken
	return woken, true, nil
}

// wake is what the watch does: it marks the operation woken.
func (m *memStore) wake(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.op.WokenAt = &at
}

func (m *memStore) Finish(_ context.Context, op storage.Operation) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.op.State != storage.OperationInProgress {
		return false, nil
	}
	m.op = op
	return true, nil
}

func (m *memStore) LockOperation(context.Context, string) (func(), bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.op.State != storage.OperationInProgress {
		return nil, false, storage.ErrNotFound
	}
	if m.locked {
		return nil, false, nil
	}
	m.locked = true
	return func() { m.mu.Lock(); m.locked = false; m.mu.Unlock() }, true, nil
}

func (m *memStore) halt() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.op.State = storage.OperationFailed
}

// fakeStep records its runs and returns what run says.
type fakeStep struct {
	name    string
	timeout time.Duration
	runs    int
	run     func(op *Operation) (StepResult, error)
}

func (s *fakeStep) Name() string { return s.name }

func (s *fakeStep) Run(_ context.Context, op *Operation) (StepResult, error) {
	s.runs++
	if s.run == nil {
		return Done()
	}
	return s.run(op)
}

type timedStep struct{ *fakeStep }

func (t timedStep) Timeout() time.Duration { return t.timeout }

type bundle struct {
	store  *memStore
	engine *Engine
	clock  time.Time
}

func setup(t *testing.T, steps ...Step) *bundle {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	b := &bundle{
		clock: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
		store: &memStore{op: storage.Operation{ID: "op-1", InstanceID: "inst-1", Type: "provision",
			State: storage.OperationInProgress, Deadline: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}},
	}
	b.engine = NewEngine(b.store, map[storage.OperationType]Pipeline{storage.OperationTypeProvision: {Steps: steps, Done: "all done"}}, log)
	b.engine.now = func() time.Time { return b.clock }
	return b
}

func TestStepsRunInOrderAndSucceed(t *testing.T) {
	t.Parallel()
	a, c := &fakeStep{name: "a"}, &fakeStep{name: "c"}
	b := setup(t, a, c)
	out, err := b.engine.Process(t.Context(), "op-1")
	if err != nil || out.RetryAfter != 0 {
		t.Fatalf("Process: %+v, %v", out, err)
	}
	if b.store.op.State != storage.OperationSucceeded || b.store.op.Description != "all done" {
		t.Fatalf("operation not succeeded: %+v", b.store.op)
	}
	if strings.Join(b.store.op.FinishedStages, ",") != "a,c" || a.runs != 1 || c.runs != 1 {
		t.Fatalf("checkpoints %v, runs %d %d", b.store.op.FinishedStages, a.runs, c.runs)
	}
}

func TestCheckpointedStepsNeverRunAgain(t *testing.T) {
	t.Parallel()
	a := &fakeStep{name: "a"}
	waits := 0
	w := &fakeStep{name: "wait", run: func(op *Operation) (StepResult, error) {
		waits++
		if waits == 1 {
			op.Describe("waiting for the cluster")
			return RetryAfter(30 * time.Second)
		}
		return Done()
	}}
	b := setup(t, a, w)
	out, err := b.engine.Process(t.Context(), "op-1")
	if err != nil || !jittered(out.RetryAfter, 30*time.Second) {
		t.Fatalf("first run: %+v, %v", out, err)
	}
	if b.store.op.Description != "waiting for the cluster" || b.store.op.Stage != "wait" {
		t.Fatalf("waiting operation not saved with its description: %+v", b.store.op)
	}
	if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
		t.Fatal(err)
	}
	if a.runs != 1 || w.runs != 2 || b.store.op.State != storage.OperationSucceeded {
		t.Fatalf("runs a=%d wait=%d, state %s", a.runs, w.runs, b.store.op.State)
	}
}

// sharingStep is a fakeStep whose checkpoint waits for the next save.
type sharingStep struct{ *fakeStep }

func (sharingStep) SharesCheckpoint(*Operation) bool { return true }

func TestSharedCheckpointsAreWrittenByTheNextSave(t *testing.T) {
	t.Parallel()
	a, c := sharingStep{&fakeStep{name: "a"}}, sharingStep{&fakeStep{name: "c"}}
	waits := 0
	w := &fakeStep{name: "wait", run: func(op *Operation) (StepResult, error) {
		if waits++; waits == 1 {
			op.Describe("waiting for the cluster")
			return RetryAfter(30 * time.Second)
		}
		return Done()
	}}
	b := setup(t, a, c, w)
	if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
		t.Fatal(err)
	}
	// One write for two done steps and a wait; both steps are recorded by it.
	if b.store.saves != 1 || strings.Join(b.store.op.FinishedStages, ",") != "a,c" || b.store.op.Description != "waiting for the cluster" {
		t.Fatalf("%d saves, checkpoints %v, description %q", b.store.saves, b.store.op.FinishedStages, b.store.op.Description)
	}
	if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
		t.Fatal(err)
	}
	if a.runs != 1 || c.runs != 1 || b.store.op.State != storage.OperationSucceeded {
		t.Fatalf("runs a=%d c=%d, state %s", a.runs, c.runs, b.store.op.State)
	}
}

func TestUnsavedSharedCheckpointIsRedone(t *testing.T) {
	t.Parallel()
	a := sharingStep{&fakeStep{name: "a"}}
	waits := 0
	w := &fakeStep{name: "wait", run: func(op *Operation) (StepResult, error) {
		if waits++; waits == 1 {
			return RetryAfter(30 * time.Second)
		}
		return Done()
	}}
	b := setup(t, a, w)
	// The save after a is lost, as when the replica dies before it: a's
	// checkpoint went with it, so the next run does a again.
	b.store.saveErr = errors.New("connection reset")
	if _, err := b.engine.Process(t.Context(), "op-1"); err == nil {
		t.Fatal("a failed save went unreported")
	}
	if len(b.store.op.FinishedStages) != 0 {
		t.Fatalf("checkpoints %v written by a failed save", b.store.op.FinishedStages)
	}
	b.store.saveErr = nil
	for b.store.op.State == storage.OperationInProgress {
		if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
			t.Fatal(err)
		}
	}
	if a.runs != 2 || b.store.op.State != storage.OperationSucceeded {
		t.Fatalf("a ran %d times, state %s", a.runs, b.store.op.State)
	}
}

func TestYieldSavesSharedCheckpoints(t *testing.T) {
	t.Parallel()
	var b *bundle
	a := sharingStep{&fakeStep{name: "a", run: func(*Operation) (StepResult, error) {
		b.engine.Slice = -1 // the run's slice is used up once a is done
		return Done()
	}}}
	c := &fakeStep{name: "c"}
	b = setup(t, a, c)
	out, err := b.engine.Process(t.Context(), "op-1")
	if err != nil || out.RetryAfter != yieldDelay {
		t.Fatalf("Process: %+v, %v", out, err)
	}
	if b.store.saves != 1 || strings.Join(b.store.op.FinishedStages, ",") != "a" || c.runs != 0 {
		t.Fatalf("%d saves, checkpoints %v, c ran %d times", b.store.saves, b.store.op.FinishedStages, c.runs)
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		step    Step
		advance time.Duration
		want    string // in the error message
	}{
		{name: "failure result", step: &fakeStep{name: "s", run: func(*Operation) (StepResult, error) {
			return Fail("cluster quota exceeded")
		}}, want: "cluster quota exceeded"},
		{name: "panic", step: &fakeStep{name: "s", run: func(*Operation) (StepResult, error) {
			panic("boom")
		}}, advance: 2 * time.Hour, want: "panicked"},
		{name: "step deadline while waiting", step: timedStep{&fakeStep{name: "s", timeout: time.Hour, run: func(op *Operation) (StepResult, error) {
			op.Describe("Waiting for the cluster (infrastructure state: Pending: quota)")
			return RetryAfter(time.Minute)
		}}}, advance: 2 * time.Hour, want: "timed out after 1h0m0s: Waiting for the cluster (infrastructure state: Pending: quota)"},
		{name: "operation deadline", step: &fakeStep{name: "s", run: func(op *Operation) (StepResult, error) {
			return RetryAfter(time.Minute)
		}}, advance: 25 * time.Hour, want: "operation timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.step)
			ctx := t.Context()
			// First run starts the step's clock; the second happens later.
			_, _ = b.engine.Process(ctx, "op-1")
			b.clock = b.clock.Add(tc.advance)
			if b.store.op.State == storage.OperationInProgress {
				if _, err := b.engine.Process(ctx, "op-1"); err != nil {
					t.Fatal(err)
				}
			}
			if b.store.op.State != storage.OperationFailed || !strings.Contains(b.store.op.ErrorMessage, tc.want) {
				t.Fatalf("want failed with %q, got %s: %q", tc.want, b.store.op.State, b.store.op.ErrorMessage)
			}
			if !strings.HasPrefix(b.store.op.Description, "Operation failed: ") {
				t.Fatalf("description %q", b.store.op.Description)
			}
		})
	}
}

func TestUnexpectedErrorsBackOffWithoutFailing(t *testing.T) {
	t.Parallel()
	s := &fakeStep{name: "s", run: func(*Operation) (StepResult, error) { return StepResult{}, errors.New("apiserver unavailable") }}
	b := setup(t, s)
	var last time.Duration
	for range 4 {
		out, err := b.engine.Process(t.Context(), "op-1")
		if err != nil {
			t.Fatal(err)
		}
		if out.RetryAfter <= last {
			t.Fatalf("backoff did not grow: %s after %s", out.RetryAfter, last)
		}
		last = out.RetryAfter
	}
	if b.store.op.State != storage.OperationInProgress {
		t.Fatalf("a temporary error failed the operation: %+v", b.store.op)
	}
}

func TestHaltedOperationStopsAtNextStepBoundary(t *testing.T) {
	t.Parallel()
	var b *bundle
	first := &fakeStep{name: "first", run: func(*Operation) (StepResult, error) {
		b.store.halt() // a DELETE arrives while this step runs
		return Done()
	}}
	second := &fakeStep{name: "second"}
	b = setup(t, first, second)
	out, err := b.engine.Process(t.Context(), "op-1")
	if err != nil || out.RetryAfter != 0 {
		t.Fatalf("Process: %+v, %v", out, err)
	}
	if second.runs != 0 {
		t.Fatal("a halted operation ran its next step")
	}
	if b.store.op.State != storage.OperationFailed {
		t.Fatalf("the halt was overwritten: %+v", b.store.op)
	}
}

func TestBusyInstanceWaits(t *testing.T) {
	t.Parallel()
	s := &fakeStep{name: "s"}
	b := setup(t, s)
	unlock, _, _ := b.store.LockOperation(t.Context(), "op-1")
	defer unlock()
	out, err := b.engine.Process(t.Context(), "op-1")
	if err != nil || out.RetryAfter != b.engine.LockedRetry || s.runs != 0 {
		t.Fatalf("busy instance: %+v, %v, runs %d", out, err, s.runs)
	}
}

func TestWakeDuringStepIsNotLost(t *testing.T) {
	t.Parallel()
	var b *bundle
	calls := 0
	s := &fakeStep{name: "wait", run: func(op *Operation) (StepResult, error) {
		calls++
		if calls == 1 {
			b.store.wake(b.clock) // the cluster became ready while this step looked
		}
		return RetryAfter(30 * time.Second)
	}}
	b = setup(t, s)
	out, err := b.engine.Process(t.Context(), "op-1")
	if err != nil || out.RetryAfter >= time.Second {
		t.Fatalf("a wake during the step was lost: %+v, %v", out, err)
	}
	out, err = b.engine.Process(t.Context(), "op-1")
	if err != nil || !jittered(out.RetryAfter, 30*time.Second) {
		t.Fatalf("no new wake, so the step's own wait applies: %+v, %v", out, err)
	}
}

// jittered reports whether got is want spread by the engine's jitter (up to a fifth).
func jittered(got, want time.Duration) bool { return got >= want && got <= want+want/5 }

// TestConclusionOutlivesItsRun: a step's conclusion replaces the Done text,
// also when the operation finishes in a later run than the one that drew it.
func TestConclusionOutlivesItsRun(t *testing.T) {
	t.Parallel()
	a := &fakeStep{name: "a", run: func(op *Operation) (StepResult, error) {
		op.Conclude("nothing to push")
		return Done()
	}}
	waits := 0
	w := &fakeStep{name: "wait", run: func(*Operation) (StepResult, error) {
		if waits++; waits == 1 {
			return RetryAfter(time.Second)
		}
		return Done()
	}}
	b := setup(t, a, w)
	for range 2 {
		if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
			t.Fatal(err)
		}
	}
	if b.store.op.State != storage.OperationSucceeded || b.store.op.Description != "nothing to push" {
		t.Fatalf("finished operation says %q (%s), want the step's conclusion", b.store.op.Description, b.store.op.State)
	}
}

// While a step cannot reach the control plane, last_operation says so and
// since when, keeping what the step was doing; once it recovers the
// description is the step's own again.
func TestUnreachableControlPlaneIsDescribed(t *testing.T) {
	t.Parallel()
	down := true
	s := &fakeStep{name: "s", run: func(op *Operation) (StepResult, error) {
		op.Describe("Creating the cluster")
		if down {
			return StepResult{}, fmt.Errorf("creating Runtime CR: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
		}
		return RetryAfter(time.Second)
	}}
	b := setup(t, s)
	began := b.clock
	for range 3 {
		if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
			t.Fatal(err)
		}
		b.clock = b.clock.Add(time.Minute)
	}
	want := "retrying: the control plane is unreachable (since " + began.Format(time.RFC3339) + "): Creating the cluster"
	if b.store.op.Description != want {
		t.Fatalf("description %q, want %q", b.store.op.Description, want)
	}

	remote := &remoteStep{s}
	rb := setup(t, remote)
	if _, err := rb.engine.Process(t.Context(), "op-1"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rb.store.op.Description, "the runtime's API server is unreachable") {
		t.Fatalf("a runtime step's description %q does not name the runtime", rb.store.op.Description)
	}

	down = false
	if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
		t.Fatal(err)
	}
	if b.store.op.Description != "Creating the cluster" {
		t.Fatalf("after recovery the description is %q", b.store.op.Description)
	}
}

// Other errors say the step is retrying after how many errors, without the
// error's text (it stays in the log).
func TestOtherErrorsAreDescribedWithoutTheirText(t *testing.T) {
	t.Parallel()
	s := &fakeStep{name: "s", run: func(op *Operation) (StepResult, error) {
		op.Describe("Installing Kyma")
		return StepResult{}, errors.New("webhook x.y.svc:443 refused the object")
	}}
	b := setup(t, s)
	for range 2 {
		if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
			t.Fatal(err)
		}
	}
	d := b.store.op.Description
	if !strings.HasPrefix(d, "retrying: after 2 errors (since ") || !strings.HasSuffix(d, "): Installing Kyma") || strings.Contains(d, "webhook") {
		t.Fatalf("description %q", d)
	}
}

type remoteStep struct{ *fakeStep }

func (remoteStep) Remote() string { return "the runtime's API server" }

// TestFailedHookRunsOnceWhenTheOperationFails: a pipeline's Failed hook
// sees the failing operation (its record as the steps left it) before it
// is recorded failed, whether a step failed it or its deadline passed, and
// never runs for a succeeded operation.
func TestFailedHookRunsOnceWhenTheOperationFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		run     func(op *Operation) (StepResult, error)
		advance time.Duration
		calls   int
	}{
		{"step failure", func(op *Operation) (StepResult, error) {
			op.Record.Conclusion = "marked"
			return Fail("no")
		}, 0, 1},
		{"operation deadline", func(op *Operation) (StepResult, error) {
			op.Record.Conclusion = "marked"
			return RetryAfter(time.Minute)
		}, 25 * time.Hour, 1},
		{"success", func(op *Operation) (StepResult, error) { return Done() }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, &fakeStep{name: "s", run: tc.run})
			calls := 0
			pipe := b.engine.pipelines[storage.OperationTypeProvision]
			pipe.Failed = func(_ context.Context, op *Operation) error {
				calls++
				if op.Record.Conclusion != "marked" || op.State != storage.OperationInProgress {
					t.Errorf("hook saw record %+v in state %s", op.Record, op.State)
				}
				return errors.New("AVS down") // logged; the operation fails all the same
			}
			b.engine.pipelines[storage.OperationTypeProvision] = pipe
			_, _ = b.engine.Process(t.Context(), "op-1")
			b.clock = b.clock.Add(tc.advance)
			if b.store.op.State == storage.OperationInProgress {
				_, _ = b.engine.Process(t.Context(), "op-1")
			}
			if calls != tc.calls {
				t.Errorf("hook ran %d times, want %d (state %s)", calls, tc.calls, b.store.op.State)
			}
			if tc.calls > 0 && b.store.op.State != storage.OperationFailed {
				t.Errorf("state %s, want failed", b.store.op.State)
			}
		})
	}
}
