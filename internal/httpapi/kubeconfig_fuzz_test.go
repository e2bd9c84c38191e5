package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzKubeconfigAccess: whatever Origin, method and Authorization a request
// to /kubeconfig carries, it reaches the handler only with the scope's
// token or from an allowed origin, and only an allowed origin is named in
// Access-Control-Allow-Origin.
func FuzzKubeconfigAccess(f *testing.F) {
	const allowed = "https://cockpit.example"
	for _, seed := range []struct{ origin, method, auth string }{
		{allowed, http.MethodGet, ""}, {allowed, http.MethodOptions, ""}, {"https://evil.example", http.MethodGet, ""},
		{"null", http.MethodOptions, "Bearer x"}, {"", http.MethodGet, "Bearer ok"}, {allowed + " ", http.MethodGet, ""},
		{"HTTPS://COCKPIT.EXAMPLE", http.MethodGet, ""},
	} {
		f.Add(seed.origin, seed.method, seed.auth)
	}
	// A stand-in for auth.Require: only "Bearer ok" has the scope.
	requireScope := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer ok" {
				writeError(w, http.StatusUnauthorized, "Unauthorized", "no")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	f.Fuzz(func(t *testing.T, origin, method, authz string) {
		req, err := http.NewRequest(method, "/kubeconfig/i-1", nil)
		if err != nil {
			return // not a request a server could receive
		}
		req.Header.Set("Origin", origin)
		req.Header.Set("Authorization", authz)
		served := false
		h := kubeconfigAccess([]string{allowed}, requireScope)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			served = true
		}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fromCockpit := origin == allowed
		if served && !fromCockpit && authz != "Bearer ok" {
			t.Fatalf("served %s from %q with %q", method, origin, authz)
		}
		if acao := rec.Header().Get("Access-Control-Allow-Origin"); acao != "" && (acao != allowed || !fromCockpit) {
			t.Fatalf("Access-Control-Allow-Origin %q for origin %q", acao, origin)
		}
		if rec.Code >= 500 {
			t.Fatalf("status %d", rec.Code)
		}
	})
}
