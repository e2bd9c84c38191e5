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
	// RunningFor is how long it has run (until now, or until it finished).
	RunningFor time.Duration
	// ToCome are the pipeline's steps not started yet, while it runs.
	ToCome []string
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
	// Left and Width place the step's bar on its operation's time axis,
	// in percent; Ticks place its waits and errors.
	Left, Width float64
	Ticks       []float64
}

// layout places each operation's steps on a time axis from its acceptance
// to its end (now while it runs), and names the steps still to come.
func layout(ops []Operation, pipelines map[string][]string, now time.Time) {
	for i := range ops {
		op := &ops[i]
		end := now
		if op.Finished != nil {
			end = *op.Finished
		}
		op.RunningFor = end.Sub(op.Created)
		span := float64(max(end.Sub(op.Created), time.Second))
		at := func(t time.Time) float64 { return min(max(100*float64(t.Sub(op.Created))/span, 0), 100) }
		for j := range op.Steps {
			s := &op.Steps[j]
			if s.Start.IsZero() {
				continue
			}
			stop := s.End
			if stop.IsZero() {
				stop = end
			}
			s.Left = at(s.Start)
			s.Width = max(at(stop)-s.Left, 0.5)
			s.Ticks = nil
			for _, h := range s.History {
				s.Ticks = append(s.Ticks, at(h.CreatedAt))
			}
		}
		if !op.InProgress {
			continue
		}
		started := map[string]bool{}
		for _, s := range op.Steps {
			started[s.Name] = true
		}
		for _, name := range pipelines[strings.TrimSuffix(op.Type, " (suspension)")] {
			if !started[name] {
				op.ToCome = append(op.ToCome, name)
			}
		}
	}
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
