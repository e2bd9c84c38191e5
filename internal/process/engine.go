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
	// LockInstance takes an exclusive lock on an instance, held until
	// unlock is called or the holder's database connection dies (so a
	// killed replica never keeps it).
	LockInstance(ctx context.Context, instanceID string) (unlock func(), ok bool, err error)
}

// Pipeline is the ordered steps of one operation type.
type Pipeline struct {
	Steps []Step
	// Succeeded runs after the last step, before the operation is marked
	// succeeded; it may be nil.
	Succeeded func(ctx context.Context, op *Operation) error
	// Done is the description of a succeeded operation.
	Done string
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
	op, inst, err := e.store.Work(ctx, operationID)
	if errors.Is(err, storage.ErrNotFound) {
		return Outcome{}, nil // removed with its deprovisioned instance
	}
	if err != nil {
		return Outcome{}, err
	}
	if !op.InProgress() {
		return Outcome{}, nil
	}
	// One worker per instance at a time: a deprovisioning waits for a
	// provisioning's current step to end before it starts tearing down.
	unlock, ok, err := e.store.LockInstance(ctx, op.InstanceID)
	if err != nil {
		return Outcome{}, err
	}
	if !ok {
		return Outcome{RetryAfter: e.LockedRetry}, nil
	}
	defer unlock()
	// Reload under the lock: the previous holder may have moved it on.
	if op, inst, err = e.store.Work(ctx, operationID); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Outcome{}, nil
		}
		return Outcome{}, err
	}
	if !op.InProgress() {
		return Outcome{}, nil
	}
	data, err := decodeData(op.Data)
	if err != nil {
		return Outcome{}, e.fail(ctx, &Operation{Operation: op, Instance: inst, now: e.now}, "corrupt operation data: "+err.Error())
	}
	o := &Operation{Operation: op, Instance: inst, Data: data, now: e.now}
	log := e.log.WithFields(logrus.Fields{"operation_id": op.ID, "instance_id": op.InstanceID, "type": op.Type})
	pipe, ok := e.pipelines[op.Type]
	if !ok {
		return Outcome{}, e.fail(ctx, o, fmt.Sprintf("no pipeline for %s operations", op.Type))
	}
	if e.now().After(op.Deadline) {
		return Outcome{}, e.fail(ctx, o, fmt.Sprintf("operation timed out at %s while: %s",
			op.Deadline.UTC().Format(time.RFC3339), op.Description))
	}

	began := time.Now()
	for _, step := range pipe.Steps {
		name := step.Name()
		if slices.Contains(o.FinishedStages, name) {
			continue
		}
		if time.Since(began) > e.Slice {
			return Outcome{RetryAfter: yieldDelay}, nil // progress is saved at every checkpoint
		}
		o.Stage = name
		if o.Data.StepStartedAt == nil {
			o.Data.StepStartedAt = map[string]time.Time{}
		}
		if _, ok := o.Data.StepStartedAt[name]; !ok {
			o.Data.StepStartedAt[name] = e.now()
		}
		if o.Data.StepRuns == nil {
			o.Data.StepRuns = map[string]int{}
		}
		o.Data.StepRuns[name]++
		slog := log.WithField("step", name)
		stepStart := time.Now()
		// Whatever the step's packages log through the context carries the
		// operation, instance and step.
		res, err := runStep(logging.WithLogger(ctx, slog), step, o)
		e.Observer.StepRan(op.Type, name, stepOutcome(res, err), time.Since(stepStart))
		switch {
		case err != nil && isPermanent(err):
			slog.WithError(err).Warn("step failed permanently")
			return Outcome{}, e.fail(ctx, o, err.Error())
		case err != nil:
			o.Data.Failures++
			if o.Data.FailingSince == nil {
				since := e.now()
				o.Data.FailingSince = &since
			}
			if exceeded, msg := e.stepTimedOut(step, o); exceeded {
				return Outcome{}, e.fail(ctx, o, msg+": "+err.Error())
			}
			describeRetry(step, o, err)
			backoff := min(time.Duration(1<<min(o.Data.Failures, 10))*time.Second, e.MaxBackoff)
			slog.WithError(err).WithField("retry_in", backoff).Warn("step error; retrying")
			return e.wait(ctx, o, backoff)
		case res.Failure != nil:
			slog.WithError(res.Failure).Warn("step failed")
			return Outcome{}, e.fail(ctx, o, res.Failure.Error())
		case res.RetryAfter > 0:
			o.Data.Failures, o.Data.FailingSince = 0, nil
			if exceeded, msg := e.stepTimedOut(step, o); exceeded {
				return Outcome{}, e.fail(ctx, o, msg+": "+o.Description)
			}
			return e.wait(ctx, o, res.RetryAfter)
		}
		o.Data.Failures, o.Data.FailingSince = 0, nil
		o.FinishedStages = append(o.FinishedStages, name)
		if _, ok, err := e.save(ctx, o); err != nil || !ok {
			if err == nil {
				e.removedWithInstance(ctx, o)
			}
			return Outcome{}, err // !ok: halted (e.g. a DELETE arrived) or removed
		}
		slog.Debug("step done")
	}

	if pipe.Succeeded != nil {
		if err := pipe.Succeeded(ctx, o); err != nil {
			log.WithError(err).Warn("recording success; retrying")
			return e.wait(ctx, o, e.LockedRetry)
		}
	}
	o.State = storage.OperationSucceeded
	o.Description = pipe.Done
	if o.Data.Conclusion != "" {
		o.Description = o.Data.Conclusion
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
	e.Observer.OperationFinished(done, o.Instance.PlanID)
	e.log.WithFields(logrus.Fields{"operation_id": o.ID, "instance_id": o.InstanceID, "type": o.Type,
		"step": o.Stage}).Info("operation succeeded: instance archived")
}

// stepOutcome names how a step run ended, for the Observer.
func stepOutcome(res StepResult, err error) string {
	switch {
	case err != nil && isPermanent(err), err == nil && res.Failure != nil:
		return OutcomeFailed
	case err != nil:
		return OutcomeError
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

// runStep runs a step, turning a panic into a permanent error: one bad step
// must not take its worker (and replica) down, and a bug does not heal by
// retrying for a day.
func runStep(ctx context.Context, step Step, o *Operation) (res StepResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Permanent(fmt.Errorf("internal error: step %s panicked: %v", step.Name(), r))
		}
	}()
	return step.Run(ctx, o)
}

func (e *Engine) stepTimedOut(step Step, o *Operation) (bool, string) {
	ts, ok := step.(TimedStep)
	if !ok {
		return false, ""
	}
	started := o.Data.StepStartedAt[step.Name()]
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
	raw, err := json.Marshal(o.Data)
	if err != nil {
		return fmt.Errorf("encoding operation data: %w", err)
	}
	o.Operation.Data = raw
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
		e.Observer.OperationFinished(finished, o.Instance.PlanID)
	}
	return ok, err
}

// fail ends the operation as failed with msg, which the platform user sees.
func (e *Engine) fail(ctx context.Context, o *Operation, msg string) error {
	o.State = storage.OperationFailed
	o.ErrorMessage = msg
	o.Description = "Operation failed: " + msg
	if _, err := e.finish(ctx, o); err != nil {
		return err
	}
	e.log.WithFields(logrus.Fields{"operation_id": o.ID, "instance_id": o.InstanceID, "type": o.Type,
		"step": o.Stage}).WithField("error", msg).Warn("operation failed")
	return nil
}
