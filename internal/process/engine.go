package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// operationStore is the part of storage.Store the engine uses.
type operationStore interface {
	Work(ctx context.Context, operationID string) (storage.Operation, storage.Instance, error)
	SaveProgress(ctx context.Context, op storage.Operation) (woken *time.Time, ok bool, err error)
	Finish(ctx context.Context, op storage.Operation) (bool, error)
	// LockOperation takes an exclusive lock on the instance of an operation
	// in progress, held until unlock is called or the holder's database
	// connection dies (so a killed replica never keeps it). ErrNotFound: the
	// operation is gone or no longer in progress.
	LockOperation(ctx context.Context, operationID string) (unlock func(), ok bool, err error)
}

// Pipeline is the ordered steps of one operation type.
type Pipeline struct {
	Steps []Step
	// Succeeded runs after the last step, before the operation is marked
	// succeeded; it may be nil.
	Succeeded func(ctx context.Context, op *Operation) error
	// Done is the description of a succeeded operation.
	Done string
	// Failed runs once when the operation fails, before it is recorded
	// failed, to undo what must not outlast it (an upgrade's AVS
	// maintenance); it may be nil. Its error is logged: the operation
	// fails all the same.
	Failed func(ctx context.Context, op *Operation) error
}

// Engine runs operations step by step.
type Engine struct {
	store     operationStore
	pipelines map[storage.OperationType]Pipeline
	log       logrus.FieldLogger
	now       func() time.Time
	// MaxBackoff caps the wait after unexpected step errors.
	MaxBackoff time.Duration
	// LockedRetry is how soon an operation whose instance is busy is tried again.
	LockedRetry time.Duration
	// Slice bounds how long one Process call keeps running steps before it
	// yields the worker (and lets the queue reschedule at once): well under
	// the queue's job timeout, so no step is cut off by it.
	Slice time.Duration
	// Observer is told of every step run and finished operation (metrics).
	Observer Observer
}

// NewEngine returns an engine running the pipelines by operation type.
func NewEngine(store operationStore, pipelines map[storage.OperationType]Pipeline, log logrus.FieldLogger) *Engine {
	return &Engine{store: store, pipelines: pipelines, log: log, now: time.Now, MaxBackoff: time.Minute,
		LockedRetry: 5 * time.Second, Slice: 20 * time.Second, Observer: noObserver{}}
}

// Outcome says what the queue does with an operation after Process.
type Outcome struct {
	// RetryAfter > 0: the operation waits; run it again after this long.
	// Zero: the operation is finished (or gone); drop it from the queue.
	RetryAfter time.Duration
}

// Process runs the operation's next unfinished steps until one waits, the
// operation fails, or it succeeds. A returned error means the engine could
// not do its own bookkeeping (the database is unreachable); the queue
// retries.
func (e *Engine) Process(ctx context.Context, operationID string) (Outcome, error) {
	o, release, out, err := e.claim(ctx, operationID)
	if o == nil {
		return out, err
	}
	defer release()
	pipe, ok := e.pipelines[o.Type]
	if !ok {
		return Outcome{}, e.fail(ctx, o, CategoryKEB, ReasonInternal, fmt.Sprintf("no pipeline for %s operations", o.Type))
	}
	if e.now().After(o.Deadline) {
		cat, _ := StepComponent(o.Stage)
		return Outcome{}, e.fail(ctx, o, cat, ReasonTimeout, fmt.Sprintf("operation timed out at %s while: %s",
			o.Deadline.UTC().Format(time.RFC3339), o.Description))
	}
	e.Observer.OperationRunning(o.Operation, o.Instance)
	log := e.log.WithFields(logrus.Fields{"operation_id": o.ID, "instance_id": o.InstanceID, "type": o.Type})
	if finished, out, err := e.runSteps(ctx, pipe, o, log); !finished {
		return out, err
	}
	return e.succeed(ctx, pipe, o, log)
}

// claim loads an operation in progress and takes its instance's lock: one
// worker per instance at a time, so a deprovisioning waits for a
// provisioning's current step to end before it starts tearing down. A nil
// operation means there is nothing to run now (it is finished, gone, or its
// instance is busy); out and err then say what the queue does. Otherwise
// release gives the lock back.
func (e *Engine) claim(ctx context.Context, operationID string) (o *Operation, release func(), out Outcome, err error) {
	// One statement finds the operation's instance and locks it.
	unlock, ok, err := e.store.LockOperation(ctx, operationID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, Outcome{}, nil // finished, or removed with its deprovisioned instance
	}
	if err != nil {
		return nil, nil, Outcome{}, err
	}
	if !ok {
		return nil, nil, Outcome{RetryAfter: e.LockedRetry}, nil
	}
	// Read under the lock: the previous holder may have moved it on.
	op, inst, err := e.store.Work(ctx, operationID)
	if errors.Is(err, storage.ErrNotFound) {
		err = nil
	}
	if err != nil || !op.InProgress() {
		unlock()
		return nil, nil, Outcome{}, err
	}
	data, err := decodeRecord(op.Data)
	if err != nil {
		defer unlock()
		return nil, nil, Outcome{}, e.fail(ctx, &Operation{Operation: op, Instance: inst, now: e.now}, CategoryKEB, ReasonInternal,
			"corrupt operation data: "+err.Error())
	}
	return &Operation{Operation: op, Instance: inst, Record: data, now: e.now}, unlock, Outcome{}, nil
}

// runSteps runs the pipeline's unfinished steps in order. finished is true
// once every step is done; otherwise out and err are what Process returns (a
// step waits or failed, the operation was halted, or the run yields its
// worker after e.Slice).
func (e *Engine) runSteps(ctx context.Context, pipe Pipeline, o *Operation, log logrus.FieldLogger) (finished bool, out Outcome, err error) {
	began := time.Now()
	// unsaved: the last done step shares its checkpoint with the next save
	// (SharedCheckpoint), which has not happened yet.
	unsaved := false
	for _, step := range pipe.Steps {
		if slices.Contains(o.FinishedStages, step.Name()) {
			continue
		}
		if time.Since(began) > e.Slice {
			if unsaved {
				if ok, err := e.checkpoint(ctx, o); !ok {
					return false, Outcome{}, err
				}
			}
			return false, Outcome{RetryAfter: yieldDelay}, nil
		}
		done, out, err := e.runStep(ctx, step, o, log.WithField("step", step.Name()))
		if !done {
			return false, out, err // a wait, failure or halt: saved (or ended) whatever was unsaved
		}
		unsaved = sharesCheckpoint(step, o)
	}
	return true, Outcome{}, nil // succeed's finish saves what is unsaved
}

// runStep runs one step and acts on its result: a checkpoint when it is
// done, a wait, a retry after backoff, or the operation's failure. done is
// true when the step finished and its checkpoint is saved.
func (e *Engine) runStep(ctx context.Context, step Step, o *Operation, log logrus.FieldLogger) (done bool, out Outcome, err error) {
	name := step.Name()
	o.Stage = name
	if o.Record.StepStartedAt == nil {
		o.Record.StepStartedAt = map[string]time.Time{}
	}
	if _, ok := o.Record.StepStartedAt[name]; !ok {
		o.Record.StepStartedAt[name] = e.now()
	}
	if o.Record.StepRuns == nil {
		o.Record.StepRuns = map[string]int{}
	}
	o.Record.StepRuns[name]++
	began := time.Now()
	// Whatever the step's packages log through the context carries the
	// operation, instance and step.
	res, stepErr := callStep(logging.WithLogger(ctx, log), step, o)
	e.Observer.StepRan(o.Type, o.Instance.PlanID, name, stepOutcome(res, stepErr), time.Since(began))
	if skip, ok := step.(SkippableStep); ok {
		if left, give := e.giveUp(skip, o, res, stepErr); give {
			return e.skip(ctx, o, left, log)
		}
	}
	switch {
	case stepErr != nil:
		out, err = e.retryAfterError(ctx, step, o, stepErr, log)
		return false, out, err
	case res.Failure != nil:
		log.WithError(res.Failure).Warn("step failed")
		cat, reason := classify(step, nil, ReasonStepFailed)
		if errors.Is(res.Failure, errPanicked) {
			cat, reason = CategoryKEB, ReasonInternal
		}
		return false, Outcome{}, e.fail(ctx, o, cat, reason, res.Failure.Error())
	case res.RetryAfter > 0:
		o.Record.Failures, o.Record.FailingSince = 0, nil
		if exceeded, msg := e.stepTimedOut(step, o); exceeded {
			cat, _ := StepComponent(name)
			return false, Outcome{}, e.fail(ctx, o, cat, ReasonTimeout, msg+": "+o.Description)
		}
		o.Record.note(name, HistoryWait, o.Description, e.now())
		out, err = e.wait(ctx, o, res.RetryAfter)
		return false, out, err
	}
	o.Record.Failures, o.Record.FailingSince = 0, nil
	o.FinishedStages = append(o.FinishedStages, name)
	if !sharesCheckpoint(step, o) {
		if ok, err := e.checkpoint(ctx, o); !ok {
			return false, Outcome{}, err
		}
	}
	log.Debug("step done")
	return true, Outcome{}, nil
}

// checkpoint saves the operation's progress. ok is false when the worker must
// stop: the save failed (err), or the operation was halted (e.g. a DELETE
// arrived) or removed.
func (e *Engine) checkpoint(ctx context.Context, o *Operation) (ok bool, err error) {
	if _, ok, err := e.save(ctx, o); err != nil || !ok {
		if err == nil {
			e.removedWithInstance(ctx, o)
		}
		return false, err
	}
	return true, nil
}

// retryAfterError counts an unexpected step error and schedules the step
// again after backoff, or fails the operation once the step's deadline
// passed.
func (e *Engine) retryAfterError(ctx context.Context, step Step, o *Operation, stepErr error, log logrus.FieldLogger) (Outcome, error) {
	o.Record.Failures++
	if o.Record.FailingSince == nil {
		since := e.now()
		o.Record.FailingSince = &since
	}
	if exceeded, msg := e.stepTimedOut(step, o); exceeded {
		cat, reason := classify(step, stepErr, ReasonTimeout)
		return Outcome{}, e.fail(ctx, o, cat, reason, msg+": "+stepErr.Error())
	}
	describeRetry(step, o, stepErr)
	if o.Record.Failures == 1 {
		o.Record.note(step.Name(), HistoryError, o.Description, e.now())
	}
	wait := backoff(o.Record.Failures, e.MaxBackoff)
	log.WithError(stepErr).WithField("retry_in", wait).Warn("step error; retrying")
	return e.wait(ctx, o, wait)
}

// succeed ends an operation whose every step is done.
func (e *Engine) succeed(ctx context.Context, pipe Pipeline, o *Operation, log logrus.FieldLogger) (Outcome, error) {
	if pipe.Succeeded != nil {
		if err := pipe.Succeeded(ctx, o); err != nil {
			log.WithError(err).Warn("recording success; retrying")
			return e.wait(ctx, o, e.LockedRetry)
		}
	}
	o.State = storage.OperationSucceeded
	o.Description = pipe.Done
	if o.Record.Conclusion != "" {
		o.Description = o.Record.Conclusion
	}
	if len(o.Record.Leftovers) > 0 {
		o.Description += "; " + DescribeLeftovers(o.Record.Leftovers)
	}
	o.Stage = ""
	if _, err := e.finish(ctx, o); err != nil {
		return Outcome{}, err
	}
	log.WithField("step", lastStep(pipe)).Info("operation succeeded")
	return Outcome{}, nil
}

// removedWithInstance reports a deprovisioning whose step removed the
// instance, and the operation with it, as succeeded: no Finish follows it.
func (e *Engine) removedWithInstance(ctx context.Context, o *Operation) {
	if o.Type != storage.OperationTypeDeprovision {
		return
	}
	if _, _, err := e.store.Work(ctx, o.ID); !errors.Is(err, storage.ErrNotFound) {
		return
	}
	done := o.Operation
	done.State = storage.OperationSucceeded
	now := e.now()
	done.FinishedAt = &now
	e.Observer.OperationFinished(Finished{Operation: done, Instance: o.Instance, Leftovers: o.Record.Leftovers})
	e.log.WithFields(logrus.Fields{"operation_id": o.ID, "instance_id": o.InstanceID, "type": o.Type,
		"step": o.Stage}).Info("operation succeeded: instance archived")
}

// stepOutcome names how a step run ended, for the Observer.
func stepOutcome(res StepResult, err error) string {
	switch {
	case err != nil:
		return OutcomeError
	case res.Failure != nil:
		return OutcomeFailed
	case res.RetryAfter > 0:
		return OutcomeWait
	default:
		return OutcomeDone
	}
}

// lastStep names the final step of a pipeline: the step an operation's
// closing log line belongs to.
func lastStep(p Pipeline) string {
	if len(p.Steps) == 0 {
		return ""
	}
	return p.Steps[len(p.Steps)-1].Name()
}

// callStep runs a step, turning a panic into a failure: one bad step must not
// take its worker (and replica) down, and a bug does not heal by retrying for
// a day.
func callStep(ctx context.Context, step Step, o *Operation) (res StepResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = StepResult{Failure: panicFailure(fmt.Sprintf("internal error: step %s panicked: %v", step.Name(), r))}, nil
		}
	}()
	return step.Run(ctx, o)
}

func (e *Engine) stepTimedOut(step Step, o *Operation) (bool, string) {
	ts, ok := step.(TimedStep)
	if !ok {
		return false, ""
	}
	started := o.Record.StepStartedAt[step.Name()]
	if e.now().Sub(started) <= ts.Timeout() {
		return false, ""
	}
	return true, fmt.Sprintf("step %s timed out after %s", step.Name(), ts.Timeout())
}

func (e *Engine) wait(ctx context.Context, o *Operation, d time.Duration) (Outcome, error) {
	woken, ok, err := e.save(ctx, o)
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		return Outcome{}, nil // halted while the step ran
	}
	// A watch saw the awaited change while the step ran (its wake-up of
	// the running job was a no-op): look again at once, don't sleep on it.
	if woken != nil && (o.WokenAt == nil || woken.After(*o.WokenAt)) {
		return Outcome{RetryAfter: yieldDelay}, nil
	}
	return Outcome{RetryAfter: jitter(d)}, nil
}

// jitter spreads waits by up to a fifth: operations accepted in a burst would
// otherwise poll in bursts forever, and a new operation would queue behind
// each of them.
func jitter(d time.Duration) time.Duration {
	if d < time.Second {
		return d
	}
	return d + rand.N(d/5)
}

func (e *Engine) encode(o *Operation) error {
	raw, err := json.Marshal(o.Record)
	if err != nil {
		return fmt.Errorf("encoding operation data: %w", err)
	}
	o.Data = raw
	return nil
}

// yieldDelay is the wait of an operation that yielded its worker: tiny, so it
// continues at once unless others are queued.
const yieldDelay = time.Millisecond

// bookkeeping returns a context for saving what a step did: when the job's
// context ended (timeout, shutdown) mid-step, the result must still be
// recorded, or the step's effect would be redone and its wait forgotten.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

func (e *Engine) save(ctx context.Context, o *Operation) (*time.Time, bool, error) {
	if err := e.encode(o); err != nil {
		return nil, false, err
	}
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	return e.store.SaveProgress(ctx, o.Operation)
}

func (e *Engine) finish(ctx context.Context, o *Operation) (bool, error) {
	if err := e.encode(o); err != nil {
		return false, err
	}
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	ok, err := e.store.Finish(ctx, o.Operation)
	if err == nil && ok {
		finished := o.Operation
		if finished.FinishedAt == nil {
			now := e.now()
			finished.FinishedAt = &now
		}
		e.Observer.OperationFinished(Finished{Operation: finished, Instance: o.Instance,
			Category: o.Record.ErrorCategory, Reason: o.Record.ErrorReason, Leftovers: o.Record.Leftovers})
	}
	return ok, err
}

// fail ends the operation as failed with msg, which the platform user sees,
// naming the component that failed it and a short reason code (the labels
// operators alert on, kcp_keb_v2_operation_result).
func (e *Engine) fail(ctx context.Context, o *Operation, cat Category, reason, msg string) error {
	if pipe, ok := e.pipelines[o.Type]; ok && pipe.Failed != nil {
		hctx, cancel := bookkeeping(ctx)
		if err := pipe.Failed(hctx, o); err != nil {
			e.log.WithFields(logrus.Fields{"operation_id": o.ID, "instance_id": o.InstanceID, "type": o.Type}).
				WithError(err).Warn("undoing what the failed operation did")
		}
		cancel()
	}
	o.State = storage.OperationFailed
	o.ErrorMessage = msg
	o.Record.ErrorCategory, o.Record.ErrorReason = cat, reason
	o.Description = fmt.Sprintf("Operation failed: %s [%s: %s]", msg, cat, reason)
	if _, err := e.finish(ctx, o); err != nil {
		return err
	}
	e.log.WithFields(logrus.Fields{"operation_id": o.ID, "instance_id": o.InstanceID, "type": o.Type,
		"step": o.Stage, "error_category": cat, "error_reason": reason}).WithField("error", msg).Warn("operation failed")
	return nil
}
