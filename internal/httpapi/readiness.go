package httpapi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// Probe is one of a replica's readiness checks. It runs in the background,
// never on a /readyz request, so that a probe's answer never waits on a slow
// or frozen dependency.
type Probe struct {
	// Name names the probe until its first result.
	Name string
	// Check looks at the dependency and reports one or more Checks (the
	// database probe reports the database and its schema). It must return
	// once ctx is done.
	Check func(ctx context.Context) []Check
}

// Readiness runs its probes in the background, each every interval and
// bounded by timeout, and keeps their latest results for /readyz, with when
// each was found and since when a failing check has been failing.
type Readiness struct {
	interval, timeout time.Duration
	probes            []Probe
	log               logrus.FieldLogger
	now               func() time.Time

	mu      sync.Mutex
	latest  [][]Check            // by probe; nil until its first result
	failing map[string]time.Time // check name → start of its current failure
	// draining is when shutdown began; zero while serving.
	draining time.Time
}

// Drain makes /readyz fail from now on with a required "shutdown" check: a
// stopping replica asks load balancers to stop sending before it stops
// accepting connections.
func (r *Readiness) Drain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.draining.IsZero() {
		r.draining = r.now()
	}
}

// NewReadiness returns readiness that runs probes every interval, each
// bounded by timeout, once Run is called.
func NewReadiness(interval, timeout time.Duration, log logrus.FieldLogger, probes ...Probe) *Readiness {
	return &Readiness{interval: interval, timeout: timeout, probes: probes, log: log, now: time.Now,
		latest: make([][]Check, len(probes)), failing: map[string]time.Time{}}
}

// Run runs the probes until ctx is done, each on its own, so that a probe
// waiting out its timeout delays no other.
func (r *Readiness) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, p := range r.probes {
		wg.Go(func() {
			for {
				started := r.now()
				cctx, cancel := context.WithTimeout(ctx, r.timeout)
				checks := p.Check(cctx)
				cancel()
				if ctx.Err() != nil {
					return // cut short by shutdown, not by the dependency
				}
				r.record(i, checks, started)
				select {
				case <-ctx.Done():
					return
				case <-time.After(r.interval):
				}
			}
		})
	}
	wg.Wait()
}

// record keeps the results of a probe that started at started, stamped with
// when they were found, and logs each check that starts or stops failing. A
// failure dates from the start of the check that found it: the dependency
// was in trouble then (a check of a frozen one takes its whole timeout).
func (r *Readiness) record(probe int, checks []Check, started time.Time) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range checks {
		c := &checks[i]
		c.CheckedAt = now
		since, was := r.failing[c.Name]
		switch {
		case !c.OK && !was:
			since = started
			r.failing[c.Name] = started
			log := r.log.WithField("check", c.Name).WithField("detail", c.Detail)
			if c.Required {
				log.Warn("readiness: required check failing: the replica is unavailable")
			} else {
				log.Info("readiness: check failing (not required: the replica still serves)")
			}
		case c.OK && was:
			delete(r.failing, c.Name)
			r.log.WithField("check", c.Name).WithField("failed_for", now.Sub(since).Round(time.Second).String()).
				Info("readiness: check passing again")
		}
		if !c.OK {
			c.FailingSince = since
		}
	}
	r.latest[probe] = checks
}

// staleAfter is how old a probe's latest result may grow before /readyz
// stops trusting it: a probe runs every interval and takes at most timeout,
// so a result this old means the probe is stuck.
func (r *Readiness) staleAfter() time.Duration { return 2 * (r.interval + r.timeout) }

// Report returns the latest results with their age. A probe without a result
// yet is reported as a failing required check, so a replica is not ready
// before it has looked; one whose result is stale is reported failing.
func (r *Readiness) Report() []Check {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Check
	if !r.draining.IsZero() {
		out = append(out, Check{Name: "shutdown", Required: true, Detail: "the replica is shutting down",
			CheckedAt: r.draining, FailingSince: r.draining, AgeSeconds: now.Sub(r.draining).Round(100 * time.Millisecond).Seconds()})
	}
	for i, p := range r.probes {
		if r.latest[i] == nil {
			out = append(out, Check{Name: p.Name, Required: true, Detail: "not checked yet"})
			continue
		}
		for _, c := range r.latest[i] {
			age := now.Sub(c.CheckedAt)
			c.AgeSeconds = age.Round(100 * time.Millisecond).Seconds()
			if age > r.staleAfter() {
				if c.OK {
					c.FailingSince = c.CheckedAt.Add(r.staleAfter())
				}
				c.OK = false
				c.Detail = fmt.Sprintf("no result for %s: the check is stuck (see the log); last: %s", age.Round(time.Second), c.Detail)
			}
			out = append(out, c)
		}
	}
	return out
}
