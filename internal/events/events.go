// Package events turns what keb records per operation (acceptance, each
// step's first run, the waits and errors of its history, the end) into the
// event list of GET /events and the operations console's timeline. Nothing
// is written for an event: the step history is the operation's own record,
// saved with the checkpoints and waits the engine saves anyway.
package events

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// Level is an event's severity, in upstream KEB's words.
type Level string

// Levels.
const (
	LevelInfo  Level = "info"
	LevelError Level = "error"
)

// Kind says what happened.
type Kind string

// Kinds of events.
const (
	OperationAccepted  Kind = "operation_accepted"
	StepStarted        Kind = "step_started"
	StepWaiting        Kind = "step_waiting"
	StepError          Kind = "step_error"
	StepDone           Kind = "step_done"
	OperationSucceeded Kind = "operation_succeeded"
	OperationFailed    Kind = "operation_failed"
)

// SuspensionNote ends the acceptance message of a deprovisioning that
// suspends the instance.
const SuspensionNote = " (a suspension: the instance stays)"

// Event is one entry of GET /events: upstream KEB's fields (ID, Level,
// InstanceID, OperationID, Message, CreatedAt) and keb's (RuntimeID,
// OperationType, Kind, Step).
type Event struct {
	ID            string    `json:"ID"`
	Level         Level     `json:"Level"`
	InstanceID    string    `json:"InstanceID"`
	RuntimeID     string    `json:"RuntimeID,omitempty"`
	OperationID   string    `json:"OperationID"`
	OperationType string    `json:"OperationType"`
	Kind          Kind      `json:"Kind"`
	Step          string    `json:"Step,omitempty"`
	Message       string    `json:"Message"`
	CreatedAt     time.Time `json:"CreatedAt"`
	// Reason is a wait's, an error's or a failure's reason, or a
	// succeeded operation's last description: the Message without its
	// framing.
	Reason string `json:"Reason,omitempty"`
	// Runs is how often the step ran (each look while waiting counts), on
	// step_done, and on step_started of the step the operation is at.
	Runs int `json:"Runs,omitempty"`
	// seq orders events of one operation that share a time.
	seq int
}

// record is the part of process.Record events read.
type record struct {
	StepStartedAt map[string]time.Time   `json:"stepStartedAt"`
	StepRuns      map[string]int         `json:"stepRuns"`
	History       []process.HistoryEntry `json:"history"`
	AVS           *avs.Record            `json:"avs"`
	EDP           *edp.Record            `json:"edp"`
	IAS           *ias.Record            `json:"ias"`
	LMS           *lms.Record            `json:"lms"`
}

// outside says what a done step created or removed outside keb's control
// plane, which operators look up there (an AVS evaluation's ID); "" for
// every other step.
func outside(rec record, step string) string {
	switch step {
	case "avs_internal_evaluation", "avs_external_evaluation":
		kind := avs.Internal
		if step == "avs_external_evaluation" {
			kind = avs.External
		}
		if c := rec.AVS.Of(kind); c != nil {
			return fmt.Sprintf("AVS evaluation %d (parent %d)", c.ID, c.Parent)
		}
	case "edp_registration":
		if rec.EDP != nil && rec.EDP.Created {
			return fmt.Sprintf("EDP data tenant %s (%s)", rec.EDP.Tenant, rec.EDP.Environment)
		}
	case "ias_registration":
		if rec.IAS != nil {
			return fmt.Sprintf("IAS service provider %s (client %s)", rec.IAS.ServiceProviderID, rec.IAS.ClientID)
		}
	case "lms_tenant":
		if rec.LMS != nil && rec.LMS.TenantID != "" {
			// Whether it was created or reused is in the record (lms.reused):
			// the message is the same for the account's every runtime.
			return fmt.Sprintf("LMS tenant %s (%s, %s)", rec.LMS.TenantID, rec.LMS.Name, rec.LMS.Region)
		}
	case "lms_certificates":
		if rec.LMS != nil && rec.LMS.KibanaURL != "" {
			return "LMS certificates in the overrides Secret (Kibana " + rec.LMS.KibanaURL + ")"
		}
	case "remove_avs_evaluations":
		var ids []string
		for _, kind := range []avs.Kind{avs.Internal, avs.External} {
			if c := rec.AVS.Of(kind); c != nil && c.Deleted {
				ids = append(ids, strconv.FormatInt(c.ID, 10))
			}
		}
		if len(ids) > 0 {
			return "removed AVS evaluations " + strings.Join(ids, ", ")
		}
	}
	return ""
}

// FromOperation lists an operation's events in the order they happened. A
// step's end is the next step's start (or the operation's end): the engine
// records starts only.
func FromOperation(op storage.EventOperation) []Event {
	var rec record
	_ = json.Unmarshal(op.Data, &rec) // an undecodable record shows acceptance and end only
	var out []Event
	add := func(kind Kind, level Level, step string, at time.Time, msg, reason string, runs int) {
		if at.IsZero() {
			return // a step recorded before its start was: no time to place it at
		}
		out = append(out, Event{ID: fmt.Sprintf("%s-%d", op.ID, len(out)), Level: level, InstanceID: op.InstanceID,
			RuntimeID: op.RuntimeID, OperationID: op.ID, OperationType: string(op.Type), Kind: kind, Step: step,
			Message: msg + reason, Reason: reason, CreatedAt: at.UTC(), Runs: runs, seq: len(out)})
	}
	accepted := string(op.Type) + " accepted"
	if op.Temporary {
		accepted += SuspensionNote
	}
	add(OperationAccepted, LevelInfo, "", op.CreatedAt, accepted, "", 0)
	steps := slices.Clone(op.FinishedStages)
	current := op.Stage != "" && !slices.Contains(steps, op.Stage)
	if current {
		steps = append(steps, op.Stage)
	}
	for i, name := range steps {
		at := current && i == len(steps)-1 // the step the operation is at (or failed in)
		runsSoFar := 0
		if at {
			runsSoFar = rec.StepRuns[name]
		}
		add(StepStarted, LevelInfo, name, rec.StepStartedAt[name], "step "+name+" started", "", runsSoFar)
		for _, h := range rec.History {
			if h.Step != name {
				continue
			}
			if h.Kind == process.HistoryError {
				add(StepError, LevelError, name, h.At, "step "+name+" failed, retrying: ", h.Reason, 0)
			} else {
				add(StepWaiting, LevelInfo, name, h.At, "step "+name+" waits: ", h.Reason, 0)
			}
		}
		if at {
			continue
		}
		end := op.UpdatedAt
		switch {
		case i+1 < len(steps):
			end = rec.StepStartedAt[steps[i+1]]
		case op.FinishedAt != nil:
			end = *op.FinishedAt
		}
		done, reason := "step "+name+" done", outside(rec, name)
		if reason != "" {
			done += ": "
		}
		add(StepDone, LevelInfo, name, end, done, reason, rec.StepRuns[name])
	}
	if op.FinishedAt != nil {
		switch op.State {
		case storage.OperationFailed:
			add(OperationFailed, LevelError, op.Stage, *op.FinishedAt, string(op.Type)+" failed: ", op.ErrorMessage, 0)
		default:
			add(OperationSucceeded, LevelInfo, "", *op.FinishedAt, string(op.Type)+" succeeded: ", op.Description, 0)
		}
	}
	return out
}

// FromOperations lists the events of ops ordered by time (events of one
// operation at the same time in the order they happened), leaving out those
// before since.
func FromOperations(ops []storage.EventOperation, since time.Time) []Event {
	var out []Event
	for _, op := range ops {
		for _, e := range FromOperation(op) {
			if !e.CreatedAt.Before(since) {
				out = append(out, e)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.OperationID, b.OperationID), cmp.Compare(a.seq, b.seq))
	})
	return out
}

// Row is an event and, for the end of a step or an operation, how long it
// took: what `keb events` and the console's events page show.
type Row struct {
	Event
	// Took is from the step's start to its step_done, or from the
	// acceptance to the operation's end; absent for other events.
	Took string `json:"took,omitempty"`
}

// WithDurations adds to each step_done the time since its step started, and
// to an operation's end the time since it was accepted.
func WithDurations(list []Event) []Row {
	started := map[string]time.Time{}
	rows := make([]Row, 0, len(list))
	for _, e := range list {
		r := Row{Event: e}
		switch e.Kind {
		case OperationAccepted:
			started[e.OperationID] = e.CreatedAt
		case StepStarted:
			started[e.OperationID+"/"+e.Step] = e.CreatedAt
		case StepDone:
			if t, ok := started[e.OperationID+"/"+e.Step]; ok {
				r.Took = Took(e.CreatedAt.Sub(t))
			}
		case OperationSucceeded, OperationFailed:
			if t, ok := started[e.OperationID]; ok {
				r.Took = Took(e.CreatedAt.Sub(t))
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// Took is a duration as people read it: 850ms, 12.3s, 4m05s, 1h02m.
func Took(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
