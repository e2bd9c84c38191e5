package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/storage"
)

// CensusTaker counts instances, running operations and queued jobs
// (storage.Store).
type CensusTaker interface {
	TakeCensus(ctx context.Context) (storage.Census, error)
}

// AccountCensus counts hyperscaler accounts by type and status
// (hyperscaler.AccountPool).
type AccountCensus interface {
	Census(ctx context.Context) (map[string]map[string]int, error)
}

var (
	instancesTotalDesc = prometheus.NewDesc("kcp_keb_v2_instances_total",
		"Live instances (not deprovisioned).", nil, nil)
	instancesDesc = prometheus.NewDesc("keb_instances",
		"Live instances by plan and runtime state.", []string{"plan_id", "state"}, nil)
	kymaStatesDesc = prometheus.NewDesc("keb_runtimes_by_kyma_state",
		"Live runtimes with a Kyma CR by plan and the state Lifecycle Manager reports for it (Ready, Processing, Warning, Error, Deleting).",
		[]string{"plan_id", "state"}, nil)
	queueJobsDesc = prometheus.NewDesc("keb_queue_jobs",
		"Jobs in the work queue (River) by state: available ones wait for a worker, scheduled ones for their time.",
		[]string{"state"}, nil)
	queueOldestDesc = prometheus.NewDesc("keb_queue_oldest_available_job_age_seconds",
		"How long the oldest job a worker could take has waited for one; 0 when none waits.", nil, nil)
	poolDesc = prometheus.NewDesc("keb_account_pool_secrets",
		"Hyperscaler accounts (the pool's bindings, or Secrets) by hyperscaler type and status (free, claimed, dirty, shared).",
		[]string{"hyperscaler_type", "status"}, nil)
	// upstreamPoolDescs are upstream's names of the same census (kcp_keb_v2_<status>_credentials_bindings),
	// by keb's status: operators' alerts written for upstream keep working.
	upstreamPoolDescs = map[string]*prometheus.Desc{}
	inProgressDescs   = map[storage.OperationType]*prometheus.Desc{}
)

func init() {
	for status, name := range map[string]string{"free": "available", "claimed": "claimed", "dirty": "dirty", "shared": "shared"} {
		upstreamPoolDescs[status] = prometheus.NewDesc("kcp_keb_v2_"+name+"_credentials_bindings",
			"Hyperscaler accounts (bindings) "+name+", by hyperscaler type: upstream's name of keb_account_pool_secrets{status=\""+status+"\"}.",
			[]string{"hyperscaler_type"}, nil)
	}
	for opType := range operationKinds {
		name, _ := inProgressName(opType)
		inProgressDescs[opType] = prometheus.NewDesc(name, "Operations in progress, by plan.", []string{"plan_id"}, nil)
	}
}

// cached keeps the last reading of an expensive source and refreshes it at
// most once per ttl, whatever the scrape rate. A failed refresh keeps the
// previous reading (and logs), so a scrape never fails on it.
type cached[T any] struct {
	mu      sync.Mutex
	ttl     time.Duration
	read    func(ctx context.Context) (T, error)
	log     logrus.FieldLogger
	what    string
	last    T
	at      time.Time
	hasData bool
}

func (c *cached[T]) get() (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hasData && time.Since(c.at) < c.ttl {
		return c.last, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := c.read(ctx)
	if err != nil {
		c.log.WithError(err).Warnf("metrics: reading %s", c.what)
		c.at = time.Now() // do not hammer a failing source on every scrape
		return c.last, c.hasData
	}
	c.last, c.at, c.hasData = v, time.Now(), true
	return v, true
}

// Census exports the gauges read from the database and the account pool.
type Census struct {
	db       *cached[storage.Census]
	accounts *cached[map[string]map[string]int]
}

var _ prometheus.Collector = (*Census)(nil)

// NewCensus returns the collector; accounts may be nil (no engine, so no
// account pool configured). ttl bounds how often each source is read.
func NewCensus(db CensusTaker, accounts AccountCensus, ttl time.Duration, log logrus.FieldLogger) *Census {
	c := &Census{db: &cached[storage.Census]{ttl: ttl, read: db.TakeCensus, log: log, what: "the database census"}}
	if accounts != nil {
		c.accounts = &cached[map[string]map[string]int]{ttl: ttl, read: accounts.Census, log: log, what: "the account pool"}
	}
	return c
}

// Describe sends every descriptor the collector may emit.
func (c *Census) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{instancesTotalDesc, instancesDesc, kymaStatesDesc, queueJobsDesc, queueOldestDesc, poolDesc} {
		ch <- d
	}
	for _, d := range inProgressDescs {
		ch <- d
	}
	for _, d := range upstreamPoolDescs {
		ch <- d
	}
}

// Collect reads (or reuses) the census and emits the gauges.
func (c *Census) Collect(ch chan<- prometheus.Metric) {
	if s, ok := c.db.get(); ok {
		total := 0
		for _, n := range s.Instances {
			total += n.Count
			ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(n.Count), n.PlanID, n.Kind)
		}
		ch <- prometheus.MustNewConstMetric(instancesTotalDesc, prometheus.GaugeValue, float64(total))
		for _, n := range s.KymaStates {
			ch <- prometheus.MustNewConstMetric(kymaStatesDesc, prometheus.GaugeValue, float64(n.Count), n.PlanID, n.Kind)
		}
		for _, n := range s.InProgress {
			if d, ok := inProgressDescs[storage.OperationType(n.Kind)]; ok {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n.Count), n.PlanID)
			}
		}
		for state, n := range s.QueueJobs {
			ch <- prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, float64(n), state)
		}
		ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, s.OldestAvailable.Seconds())
	}
	if c.accounts == nil {
		return
	}
	if p, ok := c.accounts.get(); ok {
		for typ, byStatus := range p {
			for status, n := range byStatus {
				ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(n), typ, status)
				if d, ok := upstreamPoolDescs[status]; ok {
					ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n), typ)
				}
			}
		}
	}
}
