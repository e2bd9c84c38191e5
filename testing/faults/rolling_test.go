package faults

import (
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// loadBalancer stands in for a Kubernetes Service: it asks every replica's
// /readyz every 100 ms, as kubelet's readiness probe does, and sends
// requests only to the replicas that answered 200 last.
type loadBalancer struct {
	s      *stack
	mu     sync.Mutex
	ready  map[*replica]bool
	stopCh chan struct{}
	done   chan struct{}
}

func (s *stack) loadBalancer() *loadBalancer {
	lb := &loadBalancer{s: s, ready: map[*replica]bool{}, stopCh: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: time.Second}
	probe := func() {
		for _, r := range s.replicas {
			ok := false
			if res, err := client.Get(r.url("/readyz")); err == nil {
				res.Body.Close()
				ok = res.StatusCode == http.StatusOK
			}
			lb.mu.Lock()
			lb.ready[r] = ok
			lb.mu.Unlock()
		}
	}
	probe()
	go func() {
		defer close(lb.done)
		for {
			select {
			case <-lb.stopCh:
				return
			case <-time.After(100 * time.Millisecond):
				probe()
			}
		}
	}()
	s.t.Cleanup(func() { close(lb.stopCh); <-lb.done })
	return lb
}

// targets are the replicas the balancer sends to now.
func (lb *loadBalancer) targets() []*replica {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var up []*replica
	for _, r := range lb.s.replicas {
		if lb.ready[r] {
			up = append(up, r)
		}
	}
	return up
}

// TestRollingRestart restarts both replicas one at a time (SIGTERM, wait
// for the exit, start, wait until ready) under load sent through a load
// balancer that follows /readyz: no request fails, every operation
// finishes, none twice, and every binding made is there once. A stopping replica fails /readyz at once and keeps
// serving for APP_SHUTDOWN_DELAY, longer than the balancer takes to notice.
func TestRollingRestart(t *testing.T) {
	faultsOnly(t)
	const n, bound = 60, 4
	s := newStack(t, stackOptions{replicas: 2, accounts: n + bound, env: []string{"APP_SHUTDOWN_DELAY=2s"}})
	lb := s.loadBalancer()
	seeded := s.expectSucceeded(s.provisionMany("roll-bound", bound), 5*time.Minute)
	load := s.startLoad("roll", loadShape{limit: n, workers: 4, pace: 20 * time.Millisecond, targets: lb.targets, binds: true,
		bind: slices.Collect(maps.Keys(seeded))})
	s.waitForLoad(load, 2*time.Minute, "accepts and bindings before the restarts", func() bool {
		return load.acceptedCount() >= 5 && load.bindingsAfter(time.Time{}) >= 2
	})
	first := time.Now()
	for _, r := range s.replicas {
		began := time.Now()
		r.stop()
		stopped := time.Now()
		r.start(t)
		t.Logf("%s restarted: stopped in %s, ready again %s later", r.name, stopped.Sub(began).Round(time.Millisecond),
			time.Since(stopped).Round(time.Millisecond))
		// The load goes on through the restarted replica too.
		at := time.Now()
		s.waitForLoad(load, 2*time.Minute, "answers after restarting "+r.name, func() bool { return load.answeredAfter(at) >= 10 })
	}
	ops := load.stop() // fails the test for every request that failed
	live := s.expectSucceeded(ops, 5*time.Minute)
	s.expectOnce(ops)
	s.expectBindings(load, first)
	maps.Copy(live, seeded)
	s.checkInvariants(live)
}
