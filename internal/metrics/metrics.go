// Package metrics holds keb's Prometheus metrics beyond HTTP: operations and
// their steps (told by the engine), token rejections (told by auth), and
// gauges read from the database and the account pool, cached so that a
// scrape never costs more than one read per refresh interval.
//
// Names follow upstream KEB's kcp_keb_v2_* where upstream has the metric, so
// existing dashboards keep working; keb's own are keb_*. docs/metrics.md
// describes each with an example alert.
package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// operationKinds maps operation types to the word upstream's metric names use.
var operationKinds = map[storage.OperationType]string{
	storage.OperationTypeProvision:   "provisioning",
	storage.OperationTypeDeprovision: "deprovisioning",
	storage.OperationTypeUpdate:      "update",
}

// finalStates are the states a finished-operations counter exists for.
var finalStates = []storage.OperationState{storage.OperationSucceeded, storage.OperationFailed}

// Operations records what the engine and auth report.
type Operations struct {
	finished   map[string]*prometheus.CounterVec // by "<kind>_<state>"
	durations  map[string]*prometheus.HistogramVec
	steps      *prometheus.HistogramVec
	rejections *prometheus.CounterVec
	leftovers  *prometheus.CounterVec
	results    *results
	secrets    *prometheus.CounterVec
	// upstreamSteps are upstream's kcp_keb_v2_<kind>_step_duration_seconds.
	upstreamSteps map[storage.OperationType]*prometheus.HistogramVec
	syncEvents    prometheus.Counter
	syncLabels    *prometheus.CounterVec
}

var _ process.Observer = (*Operations)(nil)

// NewOperations registers the event-driven metrics on reg.
func NewOperations(reg prometheus.Registerer, rejectionReasons []string) *Operations {
	m := &Operations{
		finished:  map[string]*prometheus.CounterVec{},
		durations: map[string]*prometheus.HistogramVec{},
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "keb_step_duration_seconds",
			Help: "Duration of one run of an operation step, by operation type, step and outcome (done, wait, error, failed).",
			// Steps are Kubernetes calls: milliseconds, sometimes seconds.
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"type", "step", "outcome"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keb_auth_rejections_total",
			Help: "Requests refused by token verification, by reason.",
		}, []string{"reason"}),
	}
	m.leftovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keb_steps_skipped_total",
		Help: "Steps given up on after their bounded retries (deprovisioning goes on), by operation type, step and error_category: each left something behind.",
	}, []string{"type", "step", "error_category"})
	m.results = newResults(time.Now)
	m.upstreamSteps = map[storage.OperationType]*prometheus.HistogramVec{}
	for opType, kind := range operationKinds {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kcp_keb_v2_" + kind + "_step_duration_seconds",
			Help:    "Duration of one run of a " + kind + " step, by plan and step (upstream's names; keb_step_duration_seconds has the outcome).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"plan_id", "step_name"})
		reg.MustRegister(h)
		m.upstreamSteps[opType] = h
	}
	m.secrets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keb_btp_manager_secrets_reconciled_total",
		Help: "Runtimes' sap-btp-manager Secrets the reconciler looked at, by what it did (unchanged, recreated, rewritten, skipped, no_credentials, failed) and dry_run.",
	}, []string{"action", "dry_run"})
	m.syncEvents = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "keb_subaccount_sync_events_total",
		Help: "Subaccount_Creation and Subaccount_Update events the subaccount sync read from CIS.",
	})
	m.syncLabels = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keb_subaccount_sync_label_changes_total",
		Help: "Kyma and Runtime CRs the subaccount sync relabelled (or, with dry_run, would have).",
	}, []string{"dry_run"})
	reg.MustRegister(m.steps, m.rejections, m.leftovers, m.results, m.secrets, m.syncEvents, m.syncLabels)
	for _, r := range rejectionReasons {
		m.rejections.WithLabelValues(r)
	}
	for _, kind := range operationKinds {
		for _, state := range finalStates {
			c := prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "kcp_keb_v2_operations_" + kind + "_" + string(state) + "_total",
				Help: "Finished " + kind + " operations that " + string(state) + ", by plan.",
			}, []string{"plan_id"})
			reg.MustRegister(c)
			m.finished[kind+"_"+string(state)] = c
		}
	}
	for _, kind := range []string{"provisioning", "deprovisioning"} {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kcp_keb_v2_" + kind + "_duration_minutes",
			Help:    "Time from accepting a " + kind + " to its success, in minutes, by plan.",
			Buckets: []float64{.5, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 240},
		}, []string{"plan_id"})
		reg.MustRegister(h)
		m.durations[kind] = h
	}
	return m
}

// StepRan observes one step run.
func (m *Operations) StepRan(opType storage.OperationType, planID, step, outcome string, took time.Duration) {
	m.steps.WithLabelValues(string(opType), step, outcome).Observe(took.Seconds())
	if h, ok := m.upstreamSteps[opType]; ok {
		h.WithLabelValues(planID, step).Observe(took.Seconds())
	}
}

// OperationFinished counts a finished operation and, for a succeeded
// provisioning or deprovisioning, observes how long it took from accept.
func (m *Operations) OperationFinished(f process.Finished) {
	op, planID := f.Operation, f.Instance.PlanID
	m.results.finished(f)
	kind, ok := operationKinds[op.Type]
	if !ok {
		return
	}
	if c, ok := m.finished[kind+"_"+string(op.State)]; ok {
		c.WithLabelValues(planID).Inc()
	}
	if h, ok := m.durations[kind]; ok && op.State == storage.OperationSucceeded && op.FinishedAt != nil {
		h.WithLabelValues(planID).Observe(op.FinishedAt.Sub(op.CreatedAt).Minutes())
	}
}

// StepSkipped counts a step given up on.
func (m *Operations) StepSkipped(opType storage.OperationType, left process.Leftover) {
	m.leftovers.WithLabelValues(string(opType), left.Step, string(left.Category)).Inc()
}

// OperationRunning sets the operation's in-progress result.
func (m *Operations) OperationRunning(op storage.Operation, inst storage.Instance) {
	m.results.running(op, inst)
}

// Reconciled counts a runtime's sap-btp-manager Secret the reconciler
// looked at (btpsecrets.Counter).
func (m *Operations) Reconciled(action btpmanager.Action, dryRun bool) {
	m.secrets.WithLabelValues(string(action), strconv.FormatBool(dryRun)).Inc()
}

// SubaccountSync counts a pass of the subaccount sync (subaccountsync.Counter).
func (m *Operations) SubaccountSync(events, changedCRs int, dryRun bool) {
	m.syncEvents.Add(float64(events))
	m.syncLabels.WithLabelValues(strconv.FormatBool(dryRun)).Add(float64(changedCRs))
}

// TokenRejected counts a refused request.
func (m *Operations) TokenRejected(reason string) {
	m.rejections.WithLabelValues(reason).Inc()
}

// inProgressName is the upstream gauge of running operations of a kind.
func inProgressName(opType storage.OperationType) (string, bool) {
	kind, ok := operationKinds[opType]
	if !ok {
		return "", false
	}
	return "kcp_keb_v2_operations_" + strings.ReplaceAll(kind, "-", "_") + "_in_progress_total", true
}

// NewUnsupportedParameters registers keb_unsupported_parameters_total on reg:
// parameters a platform sent that no plan schema names, ignored because
// APP_BROKER_REJECT_UNSUPPORTED_PARAMETERS is false, by plan and parameter
// (the top-level name only, so that arbitrary nested keys cannot grow the
// series without end).
func NewUnsupportedParameters(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keb_unsupported_parameters_total",
		Help: "Parameters no plan schema names, ignored (APP_BROKER_REJECT_UNSUPPORTED_PARAMETERS=false), by plan and top-level parameter.",
	}, []string{"plan", "parameter"})
	reg.MustRegister(c)
	return c
}
