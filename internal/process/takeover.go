package process

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
)

// orphanTaker hands the jobs of operations whose worker died back to the
// queue.
type orphanTaker interface {
	TakeOverOrphans(ctx context.Context, after time.Duration) ([]string, error)
}

// Takeover resumes a killed replica's running operations within seconds:
// every replica looks, every few seconds, for running jobs whose instance
// lock nobody holds (see storage.Store.TakeOverOrphans). River's own rescue
// stays as the backstop; it waits minutes and only runs on the leader.
type Takeover struct {
	store orphanTaker
	after time.Duration
	log   logrus.FieldLogger
}

// NewTakeover takes over operations orphaned for longer than after.
func NewTakeover(store orphanTaker, after time.Duration, log logrus.FieldLogger) *Takeover {
	return &Takeover{store: store, after: after, log: log}
}

// Interval is how often Run looks: a fraction of the takeover window, so an
// orphan waits at most about after + after/2.
func (t *Takeover) Interval() time.Duration { return min(max(t.after/2, time.Second), 5*time.Second) }

// Within bounds how long a killed replica's operation waits before it is
// made available again.
func (t *Takeover) Within() time.Duration { return t.after + t.Interval() }

// Run looks for orphans until ctx is done.
func (t *Takeover) Run(ctx context.Context) {
	tick := time.NewTicker(t.Interval())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ids, err := t.store.TakeOverOrphans(ctx, t.after)
		if err != nil {
			if ctx.Err() == nil {
				t.log.WithError(err).Warn("looking for orphaned operations")
			}
			continue
		}
		for _, id := range ids {
			t.log.WithField("operation_id", id).Info("took over an operation whose worker died")
		}
	}
}
