package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Integrations counts and times the calls keb makes to the optional
// external services of the provisioning pipelines (AVS, EDP, the Director, IAS, LMS), by
// integration and call, so that an operator sees a failing service before
// the operations it slows down fail.
type Integrations struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewIntegrations registers the integration call metrics on reg.
func NewIntegrations(reg prometheus.Registerer) *Integrations {
	m := &Integrations{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kcp_keb_v2_integration_requests_total",
			Help: "Calls to an external integration's API (AVS, ...), by integration, call and HTTP status (\"0\": no answer).",
		}, []string{"integration", "call", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kcp_keb_v2_integration_request_errors_total",
			Help: "Calls to an external integration's API that failed (no answer, no token, or an unexpected status), by integration and call.",
		}, []string{"integration", "call"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kcp_keb_v2_integration_request_duration_seconds",
			Help:    "Duration of a call to an external integration's API, its token request included, by integration and call.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"integration", "call"}),
	}
	reg.MustRegister(m.requests, m.errors, m.duration)
	return m
}

// Observe records one call (integration.Calls).
func (m *Integrations) Observe(integration, call string, status int, failed bool, took time.Duration) {
	m.requests.WithLabelValues(integration, call, strconv.Itoa(status)).Inc()
	if failed {
		m.errors.WithLabelValues(integration, call).Inc()
	}
	m.duration.WithLabelValues(integration, call).Observe(took.Seconds())
}
