package console

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

// Operation is one operation on the instance page.
type Operation struct {
	ID, Type, State, Description, Error string
	Created, Updated                    time.Time
	Finished                            *time.Time
	InProgress, Temporary               bool
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
	// waits for (the operation's description) and Failures its consecutive
	// unexpected errors, retried with backoff.
	Running  bool
	Waiting  string
	Failures int
	// Attempts is how often the step ran (each look while waiting counts).
	Attempts int
}

// stepData is what the engine records per operation (process.Data's fields
// the timeline needs; the JSON names are persisted, so they do not change).
type stepData struct {
	StepStartedAt map[string]time.Time `json:"stepStartedAt"`
	StepRuns      map[string]int       `json:"stepRuns"`
	Failures      int                  `json:"failures"`
}

// timeline turns stored operations into the instance page's, newest first.
func timeline(ops []storage.Operation, now time.Time) []Operation {
	out := make([]Operation, 0, len(ops))
	for _, op := range ops {
		var d stepData
		_ = json.Unmarshal(op.Data, &d) // an undecodable record shows no steps, not an error page
		o := Operation{ID: op.ID, Type: string(op.Type), State: string(op.State), Description: op.Description, Error: op.ErrorMessage,
			Created: op.CreatedAt, Updated: op.UpdatedAt, Finished: op.FinishedAt, InProgress: op.InProgress(),
			Temporary: op.Temporary}
		for i, name := range op.FinishedStages {
			s := Step{Name: name, Start: d.StepStartedAt[name], Done: true, Attempts: d.StepRuns[name]}
			switch {
			case i+1 < len(op.FinishedStages):
				s.End = d.StepStartedAt[op.FinishedStages[i+1]]
			case op.Stage != "":
				s.End = d.StepStartedAt[op.Stage]
			case op.FinishedAt != nil:
				s.End = *op.FinishedAt
			default:
				s.End = op.UpdatedAt
			}
			o.Steps = append(o.Steps, s)
		}
		if op.Stage != "" && !slices.Contains(op.FinishedStages, op.Stage) {
			s := Step{Name: op.Stage, Start: d.StepStartedAt[op.Stage], Running: op.InProgress(), Attempts: d.StepRuns[op.Stage]}
			if op.InProgress() {
				s.Waiting, s.Failures = op.Description, d.Failures
			} else if op.FinishedAt != nil {
				s.End = *op.FinishedAt // the step the operation failed in
			}
			o.Steps = append(o.Steps, s)
		}
		out = append(out, o)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
