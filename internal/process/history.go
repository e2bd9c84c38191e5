package process

import "time"

// HistoryEntry is one wait or error of a step. The JSON names are stored
// (internal/events reads them): never rename one.
type HistoryEntry struct {
	Step   string      `json:"step"`
	At     time.Time   `json:"at"`
	Kind   HistoryKind `json:"kind"`
	Reason string      `json:"reason"`
}

// HistoryKind says what a HistoryEntry records.
type HistoryKind string

// History kinds.
const (
	// HistoryWait: the step waits (retry after a delay) for the reason.
	HistoryWait HistoryKind = "wait"
	// HistoryError: a run of unexpected errors began; the step retries with
	// backoff. The reason is what last_operation said (the error's own text
	// stays in the log: it may name hosts and internals).
	HistoryError HistoryKind = "error"
)

// maxHistory bounds an operation's history: a step waiting for hours with
// changing reasons keeps its latest entries.
const maxHistory = 100

// note records a wait or error of step unless the step's latest entry
// already says the same: a step polling for the same reason is one entry,
// not one per look.
func (r *Record) note(step string, kind HistoryKind, reason string, at time.Time) {
	for i := len(r.History) - 1; i >= 0; i-- {
		if h := r.History[i]; h.Step == step {
			if h.Kind == kind && h.Reason == reason {
				return
			}
			break
		}
	}
	r.History = append(r.History, HistoryEntry{Step: step, At: at, Kind: kind, Reason: reason})
	if n := len(r.History); n > maxHistory {
		r.History = append(r.History[:0:0], r.History[n-maxHistory:]...)
	}
}
