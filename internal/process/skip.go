package process

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
)

// panicFailure is a step's panic turned into its failure.
type panicFailure string

func (p panicFailure) Error() string { return string(p) }

// Is makes a panic's failure errors.Is errPanicked.
func (panicFailure) Is(target error) bool { return target == errPanicked }

// giveUp decides whether a skippable step's run ends its retries: it failed
// (a failure does not heal by retrying), or it waits or errs beyond its
// SkipAfter. left is then what the skip leaves behind.
func (e *Engine) giveUp(step SkippableStep, o *Operation, res StepResult, stepErr error) (Leftover, bool) {
	name := step.Name()
	left := Leftover{Step: name, What: step.Leftover(o), SkippedAt: e.now()}
	if r, ok := step.(LeftoverReferrer); ok {
		left.Refs = r.LeftoverRefs(o)
	}
	left.Category, _ = StepComponent(name)
	if res.Failure != nil && stepErr == nil {
		left.Reason, left.Cause = ReasonStepFailed, res.Failure.Error()
		return left, true
	}
	if res.RetryAfter == 0 && stepErr == nil {
		return Leftover{}, false // done
	}
	if e.now().Sub(o.Record.StepStartedAt[name]) <= step.SkipAfter() {
		return Leftover{}, false
	}
	left.Reason = ReasonTimeout
	if stepErr != nil {
		left.Category, left.Reason = classify(step, stepErr, ReasonStepErrored)
		// The error's text stays in the log: it may name hosts and internals.
		left.Cause = fmt.Sprintf("gave up after %s of errors", step.SkipAfter())
	} else {
		left.Cause = fmt.Sprintf("gave up after %s: %s", step.SkipAfter(), o.Description)
	}
	return left, true
}

// skip records a skippable step as finished with what it left behind, and
// lets the operation go on.
func (e *Engine) skip(ctx context.Context, o *Operation, left Leftover, log logrus.FieldLogger) (done bool, out Outcome, err error) {
	o.Record.Leftovers = append(o.Record.Leftovers, left)
	o.Record.Failures, o.Record.FailingSince = 0, nil
	o.FinishedStages = append(o.FinishedStages, left.Step)
	o.Describe("Skipped %s, leaving %s (%s)", left.Step, left.What, left.Cause)
	e.Observer.StepSkipped(o.Type, left)
	log.WithFields(logrus.Fields{"left_behind": left.What, "cause": left.Cause, "error_category": left.Category,
		"error_reason": left.Reason}).Warn("step skipped")
	if ok, err := e.checkpoint(ctx, o); !ok {
		return false, Outcome{}, err
	}
	return true, Outcome{}, nil
}

// DescribeLeftovers says what skipped steps left behind, for the
// description of the operation that skipped them.
func DescribeLeftovers(left []Leftover) string {
	parts := make([]string, len(left))
	for i, l := range left {
		parts[i] = fmt.Sprintf("%s (%s: %s)", l.What, l.Step, l.Cause)
	}
	return "left behind: " + strings.Join(parts, "; ")
}
