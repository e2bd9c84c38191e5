package processtest

import (
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/process"
)

// Outcome names what a step's result means to the engine, for table expectations.
type Outcome int

const (
	// Done: the step finished; the engine goes on to the next one.
	Done Outcome = iota
	// Retry: the step asked to be called again after RetryAfter.
	Retry
	// Failure: the step failed the operation for good.
	Failure
	// Temporary: the step returned an error; the engine retries it with backoff.
	Temporary
)

func (o Outcome) String() string {
	return [...]string{"done", "retry", "failure", "temporary error"}[o]
}

// OutcomeOf reads a step's result as the engine does.
func OutcomeOf(res process.StepResult, err error) Outcome {
	switch {
	case err != nil:
		return Temporary
	case res.Failure != nil:
		return Failure
	case res.RetryAfter > 0:
		return Retry
	default:
		return Done
	}
}

// MustOutcome fails the test unless the step's result is want; what names the step.
func MustOutcome(t testing.TB, what string, want Outcome, res process.StepResult, err error) {
	t.Helper()
	if got := OutcomeOf(res, err); got != want {
		t.Fatalf("%s: outcome %s (result %+v, error %v), want %s", what, got, res, err, want)
	}
}

// MissingFrom returns the first of subs that s lacks, or "" when s holds them all.
func MissingFrom(s string, subs ...string) string {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return sub
		}
	}
	return ""
}
