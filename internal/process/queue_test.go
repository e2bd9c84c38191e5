package process

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
)

func TestWakeOutcome(t *testing.T) {
	t.Parallel()
	began := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		row   rivertype.JobRow
		want  time.Time
		retry bool // the caller must try again: an old run
	}{
		{name: "made available: due", row: rivertype.JobRow{State: rivertype.JobStateAvailable}},
		{name: "running: when its run began", row: rivertype.JobRow{State: rivertype.JobStateRunning, AttemptedAt: &began}, want: began},
		{name: "running without a start", row: rivertype.JobRow{State: rivertype.JobStateRunning}, retry: true},
		// JobRetry raced the completer recording the run's snooze: it
		// returns the job still waiting, not made due.
		{name: "still scheduled: not woken", row: rivertype.JobRow{State: rivertype.JobStateScheduled}, retry: true},
		{name: "still retryable: not woken", row: rivertype.JobRow{State: rivertype.JobStateRetryable}, retry: true},
		{name: "completed: nothing to wake", row: rivertype.JobRow{State: rivertype.JobStateCompleted}},
		{name: "discarded: nothing to wake", row: rivertype.JobRow{State: rivertype.JobStateDiscarded}},
	}
	for _, tc := range tests {
		got := wakeOutcome(&tc.row)
		if tc.retry {
			if got.IsZero() || got.After(began) {
				t.Errorf("%s: %v, want a run old enough to try the wake-up again", tc.name, got)
			}
			continue
		}
		if !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
