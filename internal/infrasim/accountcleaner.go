package infrasim

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/hyperscaler"
)

// AccountCleaner stands in for the landscape's account cleaner (upstream's
// subscription cleanup job, outside keb): a pool account keb released is
// labelled dirty, the cleaner empties it on the hyperscaler's side and hands
// it back by removing its dirty and tenantName labels, skipping any binding
// a Shoot still references. Here there is nothing to empty, so a dirty
// account goes back once it has been dirty for Delay. keb serve has no such
// cleaner: on a real landscape `keb pool release` is the operator's way.
type AccountCleaner struct {
	Pool *hyperscaler.AccountPool
	// Delay is how long an account stays dirty, the simulated wipe's time.
	Delay time.Duration
	Log   logrus.FieldLogger
}

// Pass hands back every account dirty for at least Delay at now (or since
// an unknown time) that no Shoot references, and returns their names.
func (c *AccountCleaner) Pass(ctx context.Context, now time.Time) ([]string, error) {
	accounts, err := c.Pool.Accounts(ctx)
	if err != nil {
		return nil, err
	}
	var due []string
	for _, a := range accounts {
		if a.State == hyperscaler.StateDirty && (a.DirtySince == nil || now.Sub(*a.DirtySince) >= c.Delay) {
			due = append(due, a.Name)
		}
	}
	if len(due) == 0 {
		return nil, nil
	}
	shoots, err := c.Pool.ShootUsage(ctx)
	if err != nil {
		return nil, err
	}
	var released []string
	for _, name := range due {
		if len(shoots[name]) > 0 {
			continue // still in use: upstream's cleaner leaves it for a later pass
		}
		if err := c.Pool.Release(ctx, name); err != nil {
			return released, fmt.Errorf("returning dirty account %s to the pool: %w", name, err)
		}
		c.Log.WithField("account", name).Info("dirty account wiped (simulated) and returned to the pool")
		released = append(released, name)
	}
	return released, nil
}

// Start runs a pass every half Delay (at least every second, at most every
// 30 s) until ctx is done; a failed pass is logged and retried on the next
// tick.
func (c *AccountCleaner) Start(ctx context.Context) error {
	every := min(max(c.Delay/2, time.Second), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := c.Pass(ctx, time.Now()); err != nil && ctx.Err() == nil {
				c.Log.WithError(err).Warn("simulated account cleaner")
			}
		}
	}
}
