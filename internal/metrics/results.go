package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// resultKeep is how long an operation's result stays after it ended (and
// how long a running operation's stays after this replica last ran it), as
// upstream's kcp_keb_v2_operation_result.
const resultKeep = 3 * time.Hour

var resultDesc = prometheus.NewDesc("kcp_keb_v2_operation_result",
	"1 for the current state of each operation this replica ran in the last 3 hours, with the component that failed it (error_category) and a short reason code (error_reason).",
	[]string{"operation_id", "instance_id", "global_account_id", "runtime_id", "shoot", "plan_id", "type", "state",
		"error_category", "error_reason", "error", "provider"}, nil)

// result is one operation's series: its label values and when it ended (or
// was last run, while in progress).
type result struct {
	labels []string
	at     time.Time
}

// results is kcp_keb_v2_operation_result: a collector of the operations
// the engine reported, each with one series for its current state.
type results struct {
	mu  sync.Mutex
	now func() time.Time
	ops map[string]result
}

func newResults(now func() time.Time) *results {
	return &results{now: now, ops: map[string]result{}}
}

func resultLabels(op storage.Operation, inst storage.Instance, cat process.Category, reason string) []string {
	return []string{op.ID, op.InstanceID, inst.GlobalAccountID, inst.RuntimeID, inst.ShootName, inst.PlanID,
		string(op.Type), string(op.State), string(cat), reason, op.ErrorMessage, inst.Provider}
}

func (r *results) running(op storage.Operation, inst storage.Instance) {
	r.set(op.ID, resultLabels(op, inst, "", ""))
}

func (r *results) finished(f process.Finished) {
	r.set(f.Operation.ID, resultLabels(f.Operation, f.Instance, f.Category, f.Reason))
}

func (r *results) set(id string, labels []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[id] = result{labels: labels, at: r.now()}
}

// Describe implements prometheus.Collector.
func (r *results) Describe(ch chan<- *prometheus.Desc) { ch <- resultDesc }

// Collect implements prometheus.Collector; it forgets results older than
// resultKeep.
func (r *results) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.now().Add(-resultKeep)
	for id, res := range r.ops {
		if res.at.Before(cutoff) {
			delete(r.ops, id)
			continue
		}
		ch <- prometheus.MustNewConstMetric(resultDesc, prometheus.GaugeValue, 1, res.labels...)
	}
}
