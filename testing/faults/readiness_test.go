package faults

import (
	"encoding/json"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestReadinessWhileFrozen freezes (SIGSTOP) the control plane's apiserver,
// then PostgreSQL, under an idle replica and asks /readyz all along: every
// answer comes from the latest background result, so none waits out a
// check's 3 s deadline on the frozen dependency (a kubelet probe's timeout
// would expire on it, and every replica would go unready at once). The first
// answers still show the result found before the freeze; once the check has
// timed out the answer names the dependency and since when it fails; after
// the thaw the replica is ready again. The latencies are logged (p50, p99,
// max) for docs/deploying.md, never asserted.
func TestReadinessWhileFrozen(t *testing.T) {
	s := newStack(t, stackOptions{replicas: 1})
	deps := []struct {
		name, check string
		status      string // the answer's status once the check fails
		code        int
		freeze      func() (thaw func())
	}{
		{"the control plane", "control plane", "degraded", http.StatusOK, func() func() {
			thaw, err := s.kcp.FreezeAPIServer()
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := thaw(); err != nil {
					t.Error(err)
				}
			}
		}},
		{"PostgreSQL", "database", "unavailable", http.StatusServiceUnavailable, func() func() {
			frozen := s.signalPG(syscall.SIGSTOP)
			return func() { s.signalPIDs(frozen, syscall.SIGCONT) }
		}},
	}
	for _, dep := range deps {
		waitFor(t, 2*time.Minute, "/readyz ready before freezing "+dep.name, func() bool {
			return s.readyz().Status == "ready"
		})
		thaw := dep.freeze()
		frozenAt := time.Now()
		thawed := false
		func() {
			defer func() {
				if !thawed {
					thaw() // a failed assertion must not leave a frozen process behind
				}
			}()
			var took []time.Duration
			var failing readiness
			for {
				a, d := s.timedReadyz()
				took = append(took, d)
				if c := a.check(dep.check); !c.OK {
					failing = a
					break
				}
				if time.Since(frozenAt) > 2*time.Minute {
					t.Fatalf("/readyz still reports %s ok two minutes after it froze: %+v", dep.name, a)
				}
				time.Sleep(10 * time.Millisecond) // a prober, not a load test
			}
			// Answered before the check gave up on the frozen dependency:
			// /readyz did not wait for it.
			if len(took) < 2 {
				t.Errorf("/readyz's first answer after %s froze already reported it failing: it waited for the check (took %s)", dep.name, took[0])
			}
			c := failing.check(dep.check)
			// Failing since the start of the check that found it: after
			// the freeze, or just before it for a check it caught mid-way
			// (bounded by the check's 3 s).
			if failing.Status != dep.status || failing.code != dep.code || c.FailingSince.Before(frozenAt.Add(-3*time.Second)) ||
				c.FailingSince.IsZero() || c.Detail == "" {
				t.Errorf("/readyz with %s frozen: %d %+v", dep.name, failing.code, failing)
			}
			slices.Sort(took)
			t.Logf("/readyz answered %d times while %s was frozen, until it reported %q (failing since %s): p50 %s, p99 %s, max %s",
				len(took), dep.name, c.Detail, c.FailingSince.Sub(frozenAt).Round(time.Millisecond),
				took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
		}()
		thaw()
		thawed = true
		waitFor(t, 2*time.Minute, "/readyz ready after "+dep.name+" thawed", func() bool {
			r := s.readyz()
			return r.Status == "ready" && r.check(dep.check).FailingSince.IsZero()
		})
	}
}

// readiness is /readyz's answer.
type readiness struct {
	code   int
	Status string           `json:"status"`
	Checks []readinessCheck `json:"checks"`
}

type readinessCheck struct {
	Name         string    `json:"name"`
	OK           bool      `json:"ok"`
	Detail       string    `json:"detail"`
	CheckedAt    time.Time `json:"checked_at"`
	FailingSince time.Time `json:"failing_since"`
}

func (r readiness) check(name string) readinessCheck {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return readinessCheck{Name: name}
}

// readyz is the first replica's /readyz answer.
func (s *stack) readyz() readiness {
	s.t.Helper()
	r, _ := s.timedReadyz()
	return r
}

// timedReadyz asks the first replica's /readyz and says how long it took.
func (s *stack) timedReadyz() (readiness, time.Duration) {
	s.t.Helper()
	began := time.Now()
	res, err := s.httpClient.Get(s.replicas[0].url("/readyz"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	r := readiness{code: res.StatusCode}
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		s.t.Fatal(err)
	}
	return r, time.Since(began)
}
