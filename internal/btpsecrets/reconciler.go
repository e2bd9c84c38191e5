// Package btpsecrets repairs drift of the sap-btp-manager Secrets across the
// fleet: a periodic, leader-only walk (and `keb reconcile btp-secrets`) that
// compares every running runtime's Secret with keb's stored credentials and
// cluster ID and recreates or rewrites it (btpmanager.Repair).
package btpsecrets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/storage"
)

// Job is the periodic job's name in the queue and its walk's name in
// fleet_walks: never rename it.
const Job = "reconcile_btp_secrets"

// instances pages through the running runtimes.
type instances interface {
	RunningInstances(ctx context.Context, after string, limit int) ([]storage.Instance, error)
}

// walks keeps where the periodic walk stands.
type walks interface {
	Walk(ctx context.Context, name string) (storage.Walk, error)
	SaveWalk(ctx context.Context, name string, w storage.Walk) error
}

// runtimeClients is keb's runtime client cache: bounded (its least recently
// used clients go), so a walk over any number of runtimes holds at most its
// bound of clients.
type runtimeClients interface {
	Client(ctx context.Context, runtimeID string) (client.Client, error)
}

// Counter is told of every runtime the reconciler looked at (metrics).
type Counter interface {
	Reconciled(action btpmanager.Action, dryRun bool)
}

// Result is what the reconciler did to one runtime's Secret.
type Result struct {
	InstanceID string            `json:"instanceID"`
	RuntimeID  string            `json:"runtimeID"`
	Action     btpmanager.Action `json:"action"`
	// Error says why the action is failed or no_credentials; "" otherwise.
	Error string `json:"error,omitempty"`
}

// Reconciler walks the running runtimes.
type Reconciler struct {
	Instances instances
	Runtimes  runtimeClients
	// Limiter paces the runtimes looked at (each costs a read, maybe a
	// write, on its API server and a client from the cache); nil: no pace.
	Limiter *rate.Limiter
	// PageSize is how many instances one database read returns (default 100).
	PageSize int
	Counter  Counter
	Log      logrus.FieldLogger
}

// Pass walks the runtimes after cursor until the end or until stop says so
// (checked between runtimes), calling each with every result. It returns
// the last instance ID done and whether the walk reached the end.
func (r *Reconciler) Pass(ctx context.Context, cursor string, dryRun bool, stop func() bool, each func(Result)) (string, bool, error) {
	size := r.PageSize
	if size <= 0 {
		size = 100
	}
	for {
		page, err := r.Instances.RunningInstances(ctx, cursor, size)
		if err != nil {
			return cursor, false, err
		}
		for _, inst := range page {
			if stop != nil && stop() {
				return cursor, false, nil
			}
			if r.Limiter != nil {
				if err := r.Limiter.Wait(ctx); err != nil {
					return cursor, false, err
				}
			}
			res := r.one(ctx, inst, dryRun)
			if r.Counter != nil {
				r.Counter.Reconciled(res.Action, dryRun)
			}
			if each != nil {
				each(res)
			}
			cursor = inst.InstanceID
		}
		if len(page) < size {
			return cursor, true, nil
		}
	}
}

// one repairs one runtime's Secret.
func (r *Reconciler) one(ctx context.Context, inst storage.Instance, dryRun bool) Result {
	res := Result{InstanceID: inst.InstanceID, RuntimeID: inst.RuntimeID}
	log := r.log().WithFields(logrus.Fields{"instance_id": inst.InstanceID, "runtime_id": inst.RuntimeID})
	if len(inst.Credentials) == 0 || inst.ClusterID == "" {
		res.Action, res.Error = btpmanager.ActionNoCredentials, "keb stores no Service Manager credentials or cluster ID for it"
		return res
	}
	creds, err := btpmanager.StoredCredentials(inst.Credentials)
	if err != nil {
		res.Action, res.Error = btpmanager.ActionNoCredentials, err.Error()
		return res
	}
	c, err := r.Runtimes.Client(ctx, inst.RuntimeID)
	if err != nil {
		log.WithError(err).Warn("BTP Manager Secret: no client for the runtime")
		res.Action, res.Error = btpmanager.ActionFailed, "the runtime's client: "+err.Error()
		return res
	}
	action, err := btpmanager.Repair(ctx, c, creds, inst.ClusterID, dryRun)
	res.Action = action
	if err != nil {
		log.WithError(err).Warn("BTP Manager Secret: repair failed")
		res.Error = err.Error()
		return res
	}
	if action == btpmanager.ActionRecreated || action == btpmanager.ActionRewritten {
		log.WithFields(logrus.Fields{"action": action, "dry_run": dryRun}).Info("BTP Manager Secret drifted")
	}
	return res
}

func (r *Reconciler) log() logrus.FieldLogger {
	if r.Log == nil {
		return logrus.StandardLogger()
	}
	return r.Log
}

// Periodic is the leader's job: every run continues the current pass for at
// most budget (a run is bounded by the queue's job timeout) and saves where
// it stopped; a new pass starts once interval has passed since the last one
// ended.
type Periodic struct {
	Reconciler *Reconciler
	Walks      walks
	Interval   time.Duration
	Budget     time.Duration
	DryRun     bool
	Now        func() time.Time
}

// Run is one run of the periodic job.
func (p *Periodic) Run(ctx context.Context) error {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	w, err := p.Walks.Walk(ctx, Job)
	if err != nil {
		return err
	}
	if w.Cursor == "" {
		if w.PassFinishedAt != nil && now().Sub(*w.PassFinishedAt) < p.Interval {
			return nil // not due
		}
		started := now()
		w.PassStartedAt = &started
	}
	began := now()
	counts := map[btpmanager.Action]int{}
	cursor, ended, err := p.Reconciler.Pass(ctx, w.Cursor, p.DryRun,
		func() bool { return now().Sub(began) > p.Budget || ctx.Err() != nil },
		func(r Result) { counts[r.Action]++ })
	w.Cursor = cursor
	if ended {
		finished := now()
		w.Cursor, w.PassFinishedAt = "", &finished
	}
	// What was done is kept even when the pass broke off: the next run
	// goes on from there.
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if serr := p.Walks.SaveWalk(saveCtx, Job, w); serr != nil {
		err = errors.Join(err, serr)
	}
	p.Reconciler.log().WithFields(logrus.Fields{"counts": fmt.Sprint(counts), "pass_ended": ended, "dry_run": p.DryRun}).
		Info("BTP Manager Secrets reconciled")
	return err
}
