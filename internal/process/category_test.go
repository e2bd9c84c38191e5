package process

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kyma-keb/keb/internal/storage"
)

// finishedObserver keeps what the engine reports of finished operations.
type finishedObserver struct {
	noObserver
	mu       sync.Mutex
	finished []Finished
}

func (o *finishedObserver) OperationFinished(f Finished) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = append(o.finished, f)
}

// TestFailureCategories fails an operation in every step keb has, in every
// way a step can fail, and checks the component and reason the engine
// reports (the labels of kcp_keb_v2_operation_result) and shows in the
// description.
func TestFailureCategories(t *testing.T) {
	t.Parallel()
	dbDown := fmt.Errorf("reading instance: %w", &pgconn.ConnectError{})
	controlPlaneDown := fmt.Errorf("reading Runtime CR: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED})
	kinds := []struct {
		name    string
		run     func(op *Operation) (StepResult, error)
		timeout time.Duration // a TimedStep's
		advance time.Duration
		// category "" : the step's component
		category Category
		reason   string
	}{
		{name: "failure", run: func(*Operation) (StepResult, error) { return Fail("refused") }, reason: ReasonStepFailed},
		{name: "panic", run: func(*Operation) (StepResult, error) { panic("boom") },
			category: CategoryKEB, reason: ReasonInternal},
		{name: "step timeout", timeout: time.Hour, advance: 2 * time.Hour,
			run: func(*Operation) (StepResult, error) { return RetryAfter(time.Minute) }, reason: ReasonTimeout},
		{name: "operation deadline", advance: 25 * time.Hour,
			run: func(*Operation) (StepResult, error) { return RetryAfter(time.Minute) }, reason: ReasonTimeout},
		{name: "errors until the step's timeout", timeout: time.Hour, advance: 2 * time.Hour,
			run: func(*Operation) (StepResult, error) { return StepResult{}, fmt.Errorf("odd answer") }, reason: ReasonTimeout},
		{name: "database unreachable", timeout: time.Hour, advance: 2 * time.Hour,
			run:      func(*Operation) (StepResult, error) { return StepResult{}, dbDown },
			category: CategoryDB, reason: ReasonDB},
		{name: "control plane unreachable", timeout: time.Hour, advance: 2 * time.Hour,
			run:      func(*Operation) (StepResult, error) { return StepResult{}, controlPlaneDown },
			category: CategoryK8sClient, reason: ReasonK8sClient},
	}
	for name, component := range stepComponents {
		for _, k := range kinds {
			t.Run(name+"/"+k.name, func(t *testing.T) {
				t.Parallel()
				var step Step = &fakeStep{name: name, run: k.run}
				if k.timeout > 0 {
					step = timedStep{&fakeStep{name: name, timeout: k.timeout, run: k.run}}
				}
				b := setup(t, step)
				obs := &finishedObserver{}
				b.engine.Observer = obs
				_, _ = b.engine.Process(t.Context(), "op-1")
				b.clock = b.clock.Add(k.advance)
				if b.store.op.State == storage.OperationInProgress {
					if _, err := b.engine.Process(t.Context(), "op-1"); err != nil {
						t.Fatal(err)
					}
				}
				want := k.category
				if want == "" {
					want = component
				}
				if len(obs.finished) != 1 {
					t.Fatalf("observer told of %d finished operations, want 1", len(obs.finished))
				}
				f := obs.finished[0]
				if f.Operation.State != storage.OperationFailed || f.Category != want || f.Reason != k.reason {
					t.Errorf("finished %s, category %q, reason %q; want failed, %q, %q",
						f.Operation.State, f.Category, f.Reason, want, k.reason)
				}
				if suffix := fmt.Sprintf("[%s: %s]", want, k.reason); !strings.HasSuffix(b.store.op.Description, suffix) {
					t.Errorf("description %q does not end in %q", b.store.op.Description, suffix)
				}
			})
		}
	}
}

// skippable is a SkippableStep for the engine's tests.
type skippable struct {
	*fakeStep
	after time.Duration
}

func (s skippable) SkipAfter() time.Duration   { return s.after }
func (s skippable) Leftover(*Operation) string { return "a thing" }

func TestSkippableStepIsSkippedAfterItsBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		run     func(op *Operation) (StepResult, error)
		advance time.Duration
		reason  string
		cause   string
	}{
		{name: "waits too long", advance: 10 * time.Minute, reason: ReasonTimeout, cause: "gave up after 5m0s: waiting",
			run: func(op *Operation) (StepResult, error) { op.Describe("waiting"); return RetryAfter(time.Minute) }},
		{name: "errs too long", advance: 10 * time.Minute, reason: ReasonStepErrored, cause: "gave up after 5m0s of errors",
			run: func(*Operation) (StepResult, error) { return StepResult{}, fmt.Errorf("odd") }},
		{name: "fails", reason: ReasonStepFailed, cause: "no way",
			run: func(*Operation) (StepResult, error) { return Fail("no way") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			last := &fakeStep{name: "delete_runtime"}
			b := setup(t, skippable{&fakeStep{name: "delete_kyma", run: tc.run}, 5 * time.Minute}, last)
			obs := &finishedObserver{}
			b.engine.Observer = obs
			_, _ = b.engine.Process(t.Context(), "op-1")
			if tc.advance > 0 {
				if last.runs != 0 {
					t.Fatal("the next step ran before the skippable step's bound passed")
				}
				b.clock = b.clock.Add(tc.advance)
				_, _ = b.engine.Process(t.Context(), "op-1")
			}
			if b.store.op.State != storage.OperationSucceeded || last.runs != 1 {
				t.Fatalf("state %s, next step ran %d times; want succeeded after running it once", b.store.op.State, last.runs)
			}
			want := "all done; left behind: a thing (delete_kyma: " + tc.cause + ")"
			if b.store.op.Description != want {
				t.Errorf("description %q, want %q", b.store.op.Description, want)
			}
			if len(obs.finished) != 1 || len(obs.finished[0].Leftovers) != 1 ||
				obs.finished[0].Leftovers[0].Reason != tc.reason ||
				obs.finished[0].Leftovers[0].Category != CategoryLifecycleManager {
				t.Errorf("observer told %+v; want one leftover by lifecycle-manager, %s", obs.finished, tc.reason)
			}
		})
	}
}
