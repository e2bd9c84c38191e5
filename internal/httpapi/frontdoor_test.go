package httpapi

import (
	"crypto"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
