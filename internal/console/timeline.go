package console

import (
	"slices"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/events"
)

// Operation is one operation on the instance page.
type Operation struct {
	ID, Type, State, Description, Error string
	Created                             time.Time
	Finished                            *time.Time
	InProgress                          bool
	Steps                               []Step
}

// Step is one step of an operation's timeline.
type Step struct {
	Name string
	// Start is the step's first run; End when the next step began (or the
	// operation finished); zero while it runs.
	Start, End time.Time
	Done       bool
	// Running marks the step the operation is at now; Waiting is what it
	// last waited for or failed with.
	Running bool
	Waiting string
	// History is the step's waits and errors, oldest first.
	History []events.Event
	// Attempts is how often the step ran (each look while waiting counts).
	Attempts int
}

// timeline turns an instance's events (GET /events' list, ordered by time)
// into the instance page's operations, newest first.
func timeline(list []events.Event) []Operation {
	var ops []Operation
	index := map[string]int{}
	for _, e := range list {
		i, ok := index[e.OperationID]
		if !ok {
			i = len(ops)
			index[e.OperationID] = i
			ops = append(ops, Operation{ID: e.OperationID, Type: e.OperationType, State: "in progress", InProgress: true,
				Created: e.CreatedAt, Description: "waiting for a worker"})
		}
		op := &ops[i]
		step := func() *Step {
			for j := range op.Steps {
				if op.Steps[j].Name == e.Step {
					return &op.Steps[j]
				}
			}
			op.Steps = append(op.Steps, Step{Name: e.Step})
			return &op.Steps[len(op.Steps)-1]
		}
		switch e.Kind {
		case events.OperationAccepted:
			op.Created = e.CreatedAt
			if strings.HasSuffix(e.Message, events.SuspensionNote) {
				op.Type += " (suspension)"
			}
		case events.StepStarted:
			s := step()
			s.Start, s.Running, s.Attempts = e.CreatedAt, true, e.Runs
		case events.StepWaiting, events.StepError:
			s := step()
			s.History = append(s.History, e)
			s.Waiting, op.Description = e.Reason, e.Reason
		case events.StepDone:
			s := step()
			s.End, s.Done, s.Running, s.Attempts = e.CreatedAt, true, false, e.Runs
		case events.OperationSucceeded, events.OperationFailed:
			at := e.CreatedAt
			op.Finished, op.InProgress = &at, false
			op.State, op.Description = "succeeded", e.Reason
			if e.Kind == events.OperationFailed {
				op.State, op.Error, op.Description = "failed", e.Reason, e.Message
			}
			for j := range op.Steps {
				if s := &op.Steps[j]; s.Running {
					s.Running, s.End = false, at // the step the operation failed in
				}
			}
		}
	}
	slices.Reverse(ops)
	return ops
}
