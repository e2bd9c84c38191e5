package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics counts and times requests by route template, method and code.
type metrics struct {
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "keb_http_request_duration_seconds",
			Help:    "Duration of HTTP requests by route, method and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method", "code"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keb_http_requests_total",
			Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
	}
	reg.MustRegister(m.duration, m.requests)
	return m
}

// knownMethods are the methods metrics name; any other is counted as
// "other", so that clients inventing method tokens cannot grow the label set.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

func methodLabel(method string) string {
	if knownMethods[method] {
		return method
	}
	return "other"
}

func (m *metrics) observe(route, method string, code int, d time.Duration) {
	c := strconv.Itoa(code)
	method = methodLabel(method)
	m.duration.WithLabelValues(route, method, c).Observe(d.Seconds())
	m.requests.WithLabelValues(route, method, c).Inc()
}

func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		m.observe(routeOf(req), req.Method, rec.code(), time.Since(start))
	})
}

// wrapUnmatched measures requests that matched no route under one label, so
// that scanners cannot blow up the label cardinality.
func (m *metrics) wrapUnmatched(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		m.observe("unmatched", req.Method, rec.code(), time.Since(start))
	})
}
