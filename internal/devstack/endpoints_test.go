package devstack

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/config"
)

// Each keb dev start gives the CIS stand-in a secret of its own, and adding
// an event goes through the guard keb dev puts in front (a broker:write
// token).
func TestDevCIS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	guard := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	}
	var first, second config.Config
	h, err := devCIS(&first, ln, guard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := devCIS(&second, ln, guard); err != nil {
		t.Fatal(err)
	}
	a, b := first.Cleanup.CISClientSecret, second.Cleanup.CISClientSecret
	if len(a) < 32 || a == b {
		t.Fatalf("secrets %q and %q: want a new random one each start", a, b)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, CISPrefix+"/events", strings.NewReader(`{"type":"SUBACCOUNT_DELETE","subaccount_id":"sa"}`)))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("POST %s/events past the guard: %d", CISPrefix, rec.Code)
	}
}
