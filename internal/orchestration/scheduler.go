package orchestration

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// store is the part of storage.Orchestrations the scheduler uses.
type store interface {
	Get(ctx context.Context, id string) (storage.Orchestration, error)
	Advance(ctx context.Context, id string, now time.Time, sch storage.Schedule) (storage.Progress, error)
}

// Scheduler advances orchestrations; it is the work of their queue jobs
// (process.Scheduler). Every pass is one transaction on the orchestration's
// row, so any replica may run it, and a killed replica's pass is simply
// redone by another.
type Scheduler struct {
	store store
	// Now is the scheduler's clock (maintenance windows); tests inject one.
	Now func() time.Time
	// Poll is how often an orchestration with upgrades in progress is
	// looked at; a finished upgrade wakes it sooner (Observer).
	Poll time.Duration
	// MaxWait caps a sleep until the next maintenance window, so that a
	// cancel or a changed clock is noticed.
	MaxWait time.Duration
	// Windows resolves the window of runtimes provisioned without one.
	Windows maintenance.Config
	// OperationTimeout bounds each upgrade operation.
	OperationTimeout time.Duration
	log              logrus.FieldLogger
	// passes and started count the scheduler's work (Collectors).
	passes, started prometheus.Counter
}

var _ process.Scheduler = (*Scheduler)(nil)

// NewScheduler returns a scheduler over the orchestration store.
func NewScheduler(s store, windows maintenance.Config, log logrus.FieldLogger) *Scheduler {
	return &Scheduler{store: s, Now: time.Now, Poll: time.Second, MaxWait: time.Minute, Windows: windows,
		OperationTimeout: 3 * time.Hour, log: log,
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "keb_orchestration_passes_total",
			Help: "Passes of orchestration schedulers (each one transaction of a fixed number of statements)."}),
		started: prometheus.NewCounter(prometheus.CounterOpts{Name: "keb_orchestration_upgrades_started_total",
			Help: "Upgrade operations orchestrations started."}),
	}
}

// Collectors are the scheduler's metrics, for the server's registry.
func (s *Scheduler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.passes, s.started}
}

// Advance implements process.Scheduler.
func (s *Scheduler) Advance(ctx context.Context, id string) (time.Duration, error) {
	o, err := s.store.Get(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("reading orchestration %s: %w", id, err)
	}
	var p Parameters
	if err := json.Unmarshal(o.Parameters, &p); err != nil {
		return 0, fmt.Errorf("decoding parameters of orchestration %s: %w", id, err)
	}
	now := s.Now()
	prog, err := s.store.Advance(ctx, id, now, s.schedule(o, p, now))
	if err != nil {
		return 0, err
	}
	s.passes.Inc()
	s.started.Add(float64(prog.Started))
	log := s.log.WithFields(logrus.Fields{"orchestration_id": id, "state": prog.State})
	if prog.Started > 0 || prog.Finished > 0 {
		log.WithFields(logrus.Fields{"started": prog.Started, "finished": prog.Finished, "running": prog.Running}).Info("orchestration advanced")
	}
	switch {
	case prog.Done():
		log.Info("orchestration ended")
		return 0, nil
	case prog.Waiting:
		return 2 * s.Poll, nil // behind another orchestration of its kind
	case prog.Running > 0 || prog.NextDue.IsZero():
		return s.Poll, nil
	}
	return min(max(prog.NextDue.Sub(now), s.Poll), s.MaxWait), nil
}

// schedule is how the store starts this orchestration's upgrades.
func (s *Scheduler) schedule(o storage.Orchestration, p Parameters, now time.Time) storage.Schedule {
	return storage.Schedule{
		Include: selectors(p.Targets.Include), Exclude: selectors(p.Targets.Exclude),
		Workers:           p.Strategy.Parallel.Workers,
		MaintenanceWindow: p.Strategy.Schedule == ScheduleMaintenanceWindow,
		Windows:           s.Windows,
		NewOperation: func(t storage.Target) (storage.Operation, error) {
			u := &process.Upgrade{OrchestrationID: o.ID, DryRun: p.DryRun}
			if p.Kyma != nil {
				u.KymaVersion, u.KymaChannel = p.Kyma.Version, p.Kyma.Channel
			}
			if p.Kubernetes != nil {
				u.KubernetesVersion, u.MachineImage, u.MachineImageVersion = p.Kubernetes.Version,
					p.Kubernetes.MachineImage, p.Kubernetes.MachineImageVersion
			}
			data, err := json.Marshal(process.Record{Upgrade: u})
			if err != nil {
				return storage.Operation{}, err
			}
			return storage.Operation{
				Description: fmt.Sprintf("Upgrade accepted by orchestration %s: waiting for a worker", o.ID),
				Deadline:    now.Add(s.OperationTimeout), Data: data,
			}, nil
		},
	}
}

// waker wakes the scheduler of an orchestration.
type waker interface {
	WakeOrchestrationOf(ctx context.Context, orchestrationID string)
}

// Observer passes the engine's reports on and wakes an orchestration's
// scheduler when one of its upgrades finishes, so that the freed worker is
// used at once rather than at the next poll.
type Observer struct {
	process.Observer
	Orchestrations waker
}

// OperationFinished implements process.Observer.
func (o Observer) OperationFinished(f process.Finished) {
	o.Observer.OperationFinished(f)
	op := f.Operation
	if !op.Type.IsUpgrade() {
		return
	}
	var d process.Record
	if err := json.Unmarshal(op.Data, &d); err != nil || d.Upgrade == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o.Orchestrations.WakeOrchestrationOf(ctx, d.Upgrade.OrchestrationID)
}
