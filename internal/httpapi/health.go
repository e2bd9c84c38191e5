package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/kyma-keb/keb/internal/buildinfo"
)

// Check is one part of a replica's readiness as /readyz reports it. Detail
// is for operators and is answered without a token: it names states and
// versions, never hosts, ports, users, database names or raw driver errors
// (those go to the log).
type Check struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Required checks make the replica unready (503) when they fail; the
	// others are reported while it keeps serving (status "degraded").
	Required bool   `json:"required"`
	Detail   string `json:"detail,omitempty"`
	// CheckedAt is when the check ran (in the background: /readyz reports
	// the latest result, AgeSeconds old, and never waits for a check).
	CheckedAt  time.Time `json:"checked_at,omitzero"`
	AgeSeconds float64   `json:"age_seconds"`
	// FailingSince is when a failing check began to fail.
	FailingSince time.Time `json:"failing_since,omitzero"`
}

// CheckTimeout bounds each background readiness check, so a hung dependency
// gives a result ("did not answer") instead of a hung check.
const CheckTimeout = 3 * time.Second

// healthz answers while the process runs and serves HTTP: a liveness probe.
// It checks no dependency, so a database outage never gets a replica
// restarted.
// versionHandler serves GET /version: the build's version, commit and the
// schema version it needs, encoded once (they never change while it runs).
// It is served without a token, like /openapi.yaml: it names software
// versions only.
func versionHandler() http.HandlerFunc {
	body, _ := json.Marshal(buildinfo.Read()) // strings and numbers: never fails
	body = append(body, '\n')
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// readyz reports the replica's dependencies: 200 "ready" when all checks
// pass, 200 "degraded" when only optional ones fail (the broker still
// accepts and answers requests), 503 "unavailable" with Retry-After when a
// required one fails, so that a load balancer keeps traffic away.
//
// It answers from the checks' latest results (Readiness), so it takes as long
// as encoding them whatever the dependencies do: a probe's timeout never
// expires on a frozen database or control plane, which would take every
// replica off the network at once.
func readyz(ready *Readiness) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var checks []Check
		if ready != nil {
			checks = ready.Report()
		}
		status, code := "ready", http.StatusOK
		for _, c := range checks {
			switch {
			case c.OK:
			case c.Required:
				status, code = "unavailable", http.StatusServiceUnavailable
			case status == "ready":
				status = "degraded"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if code == http.StatusServiceUnavailable {
			setRetryAfter(w.Header(), retryUnavailable)
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(struct {
			Status string  `json:"status"`
			Checks []Check `json:"checks"`
		}{status, checks})
	})
}
