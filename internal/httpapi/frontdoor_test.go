package httpapi

import (
	"crypto"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/auth"
)

// discardWriter is a fresh ResponseWriter per request, as net/http's, that
// keeps no body: the benchmark counts what keb allocates, not a recorder.
type discardWriter struct {
	header http.Header
	status int
}

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) WriteHeader(code int)        { d.status = code }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkCatalogRequest reads a platform region's catalog (gzip) through
// keb's whole router with a verified, cached token: request ID, metrics,
// access log (info level, so the catalog's debug line is skipped), auth,
// version and region checks. Its allocs/op are the front door's own;
// net/http's (request parsing, the header's copy) come on top.
func BenchmarkCatalogRequest(b *testing.B) {
	key, err := auth.LoadOrCreateDevKey(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.InfoLevel)
	v, err := auth.NewVerifier(b.Context(), auth.Config{PublicKeys: []crypto.PublicKey{key.Public()}}, log)
	if err != nil {
		b.Fatal(err)
	}
	token, err := key.Mint("", "", "bench", []string{auth.ScopeBrokerWrite}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	brk, _ := catalogOf(b, "azure", "gcp", "trial")
	h, err := NewRouter(Options{Broker: brk, Auth: v, Log: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/oauth/cf-eu10/v2/catalog", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	for b.Loop() {
		w := &discardWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}

// Requests served at once are each counted once, under their route, method
// and code, and timed once; the series cache is filled concurrently.
func TestMetricsCountConcurrentRequests(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	log := logrus.New()
	log.SetOutput(io.Discard)
	r := mux.NewRouter()
	r.Use(requestContext(log), m.middleware, accessLog)
	r.HandleFunc("/a/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	r.HandleFunc("/b", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for j := range each {
				path := "/b"
				if (i+j)%2 == 0 {
					path = fmt.Sprintf("/a/%d", j)
				}
				r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
			}
		})
	}
	wg.Wait()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			key := f.GetName() + " " + labels["route"] + " " + labels["method"] + " " + labels["code"]
			if metric.GetCounter() != nil {
				counted[key] = metric.GetCounter().GetValue()
			} else {
				counted[key] = float64(metric.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{}
	for _, name := range []string{"keb_http_requests_total", "keb_http_request_duration_seconds"} {
		want[name+" /a/{id} GET 202"], want[name+" /b GET 200"] = workers*each/2, workers*each/2
	}
	if !maps.Equal(counted, want) {
		t.Errorf("series %v, want %v", counted, want)
	}
}
