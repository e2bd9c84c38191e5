package process

import (
	"fmt"
	"testing"
	"time"
)

func TestHistoryNotesChangesOnly(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	var r Record
	r.note("check_runtime", HistoryWait, "Pending", t0)
	r.note("check_runtime", HistoryWait, "Pending", t0.Add(time.Second)) // the same look again
	r.note("other", HistoryWait, "x", t0.Add(2*time.Second))
	r.note("check_runtime", HistoryWait, "Pending", t0.Add(3*time.Second)) // its own latest says the same
	r.note("check_runtime", HistoryError, "retrying: after 1 error", t0.Add(4*time.Second))
	r.note("check_runtime", HistoryWait, "Pending", t0.Add(5*time.Second)) // back to waiting: new entry
	if len(r.History) != 4 || r.History[3].At != t0.Add(5*time.Second) || r.History[2].Kind != HistoryError {
		t.Fatalf("history: %+v", r.History)
	}
	for i := range 2 * maxHistory {
		r.note("s", HistoryWait, fmt.Sprint(i), t0)
	}
	if len(r.History) != maxHistory || r.History[maxHistory-1].Reason != fmt.Sprint(2*maxHistory-1) {
		t.Fatalf("bounded history: %d entries, last %+v", len(r.History), r.History[len(r.History)-1])
	}
}
