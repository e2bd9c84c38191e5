package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics counts and times requests by route template, method and code.
type metrics struct {
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
	// series are the two series of each route, method and code seen, so
	// that a request neither formats its code nor hashes its labels
	// (WithLabelValues did both, on every request).
	mu     sync.RWMutex
	series map[seriesKey]requestSeries
}

type seriesKey struct {
	route, method string
	code          int
}

type requestSeries struct {
	duration prometheus.Observer
	requests prometheus.Counter
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
	m.series = map[seriesKey]requestSeries{}
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
	key := seriesKey{route: route, method: methodLabel(method), code: code}
	m.mu.RLock()
	s, ok := m.series[key]
	m.mu.RUnlock()
	if !ok {
		// Routes, methodLabel and codes bound the series, as they bound
		// the label values.
		c := strconv.Itoa(code)
		s = requestSeries{duration: m.duration.WithLabelValues(route, key.method, c),
			requests: m.requests.WithLabelValues(route, key.method, c)}
		m.mu.Lock()
		m.series[key] = s
		m.mu.Unlock()
	}
	s.duration.Observe(d.Seconds())
	s.requests.Inc()
}

// middleware measures each request; its recorder is the access log's too.
func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		m.observe(rec.routeOf(req), req.Method, rec.code(), time.Since(start))
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
