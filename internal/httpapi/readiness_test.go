package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"
)

// dependency is a database the test controls: it answers, fails, or hangs
// until the test releases it (or the check's deadline passes).
type dependency struct {
	mu      sync.Mutex
	ok      bool
	hang    bool
	entered chan struct{} // a check began to hang
	release chan struct{} // the hanging check may end
}

func (d *dependency) set(ok, hang bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ok, d.hang = ok, hang
}

func (d *dependency) check(ctx context.Context) []Check {
	d.mu.Lock()
	ok, hang := d.ok, d.hang
	d.mu.Unlock()
	c := Check{Name: "database", Required: true, OK: ok, Detail: "version 7"}
	if hang {
		d.entered <- struct{}{}
		select {
		case <-d.release:
		case <-ctx.Done():
		}
		c.OK, c.Detail = false, "the database did not answer"
	} else if !ok {
		c.Detail = "the database did not answer"
	}
	return []Check{c, {Name: "schema", Required: true, OK: ok}}
}

type readyzAnswer struct {
	code   int
	Status string  `json:"status"`
	Checks []Check `json:"checks"`
}

func (a readyzAnswer) check(t *testing.T, name string) Check {
	t.Helper()
	for _, c := range a.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("/readyz reports no %q check: %+v", name, a)
	return Check{}
}

func getReadyz(t *testing.T, h http.Handler) readyzAnswer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	a := readyzAnswer{code: rec.Code}
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
		t.Fatalf("/readyz body %q: %v", rec.Body, err)
	}
	return a
}

func waitReadyz(t *testing.T, h http.Handler, what string, cond func(readyzAnswer) bool) readyzAnswer {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		a := getReadyz(t, h)
		if cond(a) {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /readyz answer %s within a minute; last: %+v", what, a)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// /readyz answers from the latest background results: while a check hangs on
// its dependency the answer is the previous result, aged, not a wait; the
// failure shows once the check ends, with since when; it clears on recovery.
func TestReadyzAnswersFromLatestResults(t *testing.T) {
	t.Parallel()
	dep := &dependency{ok: true, entered: make(chan struct{}, 1), release: make(chan struct{})}
	log, _ := test.NewNullLogger()
	workers := Probe{Name: "workers", Check: func(context.Context) []Check {
		return []Check{{Name: "workers", OK: true, Detail: "2 workers"}}
	}}
	r := NewReadiness(time.Millisecond, time.Hour, log, Probe{Name: "database", Check: dep.check}, workers)
	h := readyz(r)

	// Before the first result the replica is not ready.
	a := getReadyz(t, h)
	if a.code != http.StatusServiceUnavailable || a.check(t, "database").Detail != "not checked yet" {
		t.Fatalf("/readyz before any check: %d %+v", a.code, a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	before := waitReadyz(t, h, "ready", func(a readyzAnswer) bool { return a.code == http.StatusOK })
	if before.Status != "ready" || before.check(t, "database").CheckedAt.IsZero() {
		t.Fatalf("ready answer: %+v", before)
	}

	// The database hangs: its check is in flight (it told us so) and stays
	// there until released, and /readyz still answers, with the result
	// found before.
	dep.set(false, true)
	<-dep.entered
	hung := getReadyz(t, h)
	db := hung.check(t, "database")
	if hung.code != http.StatusOK || !db.OK || !db.FailingSince.IsZero() {
		t.Fatalf("/readyz while the database check hangs: %d %+v", hung.code, hung)
	}
	if w := hung.check(t, "workers"); !w.OK {
		t.Fatalf("the hanging database check held up the workers check: %+v", hung)
	}
	dep.set(false, false)
	dep.release <- struct{}{}

	failing := waitReadyz(t, h, "unavailable", func(a readyzAnswer) bool { return a.code == http.StatusServiceUnavailable })
	db = failing.check(t, "database")
	if failing.Status != "unavailable" || db.FailingSince.IsZero() || db.FailingSince.After(db.CheckedAt) ||
		!strings.Contains(db.Detail, "did not answer") {
		t.Fatalf("/readyz with the database down: %+v", failing)
	}
	// Later failing results keep the time the failure began.
	later := waitReadyz(t, h, "a newer failing result", func(a readyzAnswer) bool {
		return a.check(t, "database").CheckedAt.After(db.CheckedAt)
	})
	if got := later.check(t, "database"); got.OK || !got.FailingSince.Equal(db.FailingSince) {
		t.Fatalf("failing since moved from %s to %s: %+v", db.FailingSince, got.FailingSince, later)
	}

	dep.set(true, false)
	back := waitReadyz(t, h, "ready again", func(a readyzAnswer) bool { return a.code == http.StatusOK })
	if c := back.check(t, "database"); !c.FailingSince.IsZero() {
		t.Fatalf("a passing check still says since when it fails: %+v", back)
	}
}

// A probe that never returns (a client ignoring its deadline) must not leave
// an old "ok" in place forever: past twice an interval and a timeout, its
// checks are reported failing.
func TestReadyzDistrustsStaleResults(t *testing.T) {
	t.Parallel()
	log, _ := test.NewNullLogger()
	r := NewReadiness(time.Second, 3*time.Second, log, Probe{Name: "database"})
	checked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := checked
	r.now = func() time.Time { return now }
	r.record(0, []Check{{Name: "database", Required: true, OK: true, Detail: "version 7"}}, checked)

	now = checked.Add(8 * time.Second) // exactly stale: still trusted
	if a := getReadyz(t, readyz(r)); a.code != http.StatusOK || a.check(t, "database").AgeSeconds != 8 {
		t.Fatalf("/readyz with an 8 s old result: %d %+v", a.code, a)
	}
	now = checked.Add(9 * time.Second)
	a := getReadyz(t, readyz(r))
	db := a.check(t, "database")
	if a.code != http.StatusServiceUnavailable || db.OK || !strings.Contains(db.Detail, "no result for 9s") ||
		!db.FailingSince.Equal(checked.Add(8*time.Second)) {
		t.Fatalf("/readyz with a 9 s old result: %d %+v", a.code, a)
	}
}

// A draining replica (SIGTERM received) fails /readyz at once with a
// required "shutdown" check, while its dependencies still pass: load
// balancers stop sending before it stops accepting connections.
func TestReadyzFailsWhileDraining(t *testing.T) {
	t.Parallel()
	log, _ := test.NewNullLogger()
	dep := &dependency{ok: true}
	r := NewReadiness(time.Millisecond, time.Hour, log, Probe{Name: "database", Check: dep.check})
	h := readyz(r)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitReadyz(t, h, "ready", func(a readyzAnswer) bool { return a.code == http.StatusOK })

	r.Drain()
	a := getReadyz(t, h)
	if s := a.check(t, "shutdown"); a.code != http.StatusServiceUnavailable || a.Status != "unavailable" || s.OK || !s.Required || s.FailingSince.IsZero() {
		t.Fatalf("/readyz while draining: %d %+v", a.code, a)
	}
	if db := a.check(t, "database"); !db.OK {
		t.Fatalf("the database check while draining: %+v", db)
	}
}
