package app

import (
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"

	"github.com/kyma-keb/keb/internal/btpsecrets"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
)

// btpSecretsPoll is how often the leader's reconciler job runs: a run
// continues the current pass (each run is bounded by the job timeout) or
// finds that no pass is due, one read of fleet_walks.
const btpSecretsPoll = time.Minute

// BTPSecretsReconciler builds the sap-btp-manager Secret reconciler over the
// runtime client cache; `keb serve`, `keb dev` and `keb reconcile
// btp-secrets` share it.
func BTPSecretsReconciler(cfg config.Config, store *storage.Store, runtimes *runtimeclient.Cache, counter btpsecrets.Counter,
	log logrus.FieldLogger) *btpsecrets.Reconciler {
	bs := cfg.Engine.BTPSecrets
	return &btpsecrets.Reconciler{Instances: store, Runtimes: runtimes, Counter: counter,
		Limiter: rate.NewLimiter(rate.Limit(bs.Rate), 1), Log: log.WithField("component", btpsecrets.Job)}
}

// btpSecretsJob is the leader's periodic reconciler job.
func btpSecretsJob(cfg config.Config, store *storage.Store, runtimes *runtimeclient.Cache, counter btpsecrets.Counter,
	log logrus.FieldLogger) process.Periodic {
	bs := cfg.Engine.BTPSecrets
	p := &btpsecrets.Periodic{Reconciler: BTPSecretsReconciler(cfg, store, runtimes, counter, log), Walks: store,
		Interval: bs.Interval, DryRun: bs.DryRun,
		// Well inside the job's timeout, so the walk's cursor is saved
		// before the queue cancels the run.
		Budget: cfg.Engine.JobTimeout / 2}
	return process.Periodic{Name: btpsecrets.Job, Interval: min(btpSecretsPoll, bs.Interval), Run: p.Run}
}
