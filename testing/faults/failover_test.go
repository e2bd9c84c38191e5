package faults

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"
)

// failoverLoad sizes a failover scenario's load: the accepts before the
// fault and after the recovery.
func failoverLoad() (before, after int) {
	if long() {
		return 50, 50
	}
	return 8, 8
}

// detection is how long the scenarios' failover manager takes to decide
// that the primary is gone before it promotes: Patroni's loop and TTL take
// 10 to 30 s; a few seconds already outlast keb's own retries of a request,
// so requests in the gap are answered 503.
const detection = 3 * time.Second

// TestFailoverKillPrimary kills the primary PostgreSQL (SIGKILL of all its
// processes, as a machine's death) under load and promotes the synchronous
// standby after the failover manager's detection time. Every 202, 201 and
// 200 answered before the failover is on the new primary: its operation
// finishes exactly once, its binding is there once; requests during the gap
// get 503 with Retry-After, never a 500; keb finds the new primary through
// the multi-host URL by itself. The time from the promotion to the first
// 202 is logged.
func TestFailoverKillPrimary(t *testing.T) {
	sc := startScenario(t, "kill", stackOptions{})
	sc.faultNow()
	sc.s.ha.Kill(sc.s.ha.Primary())
	time.Sleep(detection)
	sc.s.ha.Promote()
	sc.finish(time.Now())
}

// scenario is a failover scenario under its load: accepts, polls and
// bindings of the instances that succeeded, with the pipeline at zero
// delay, and in the long variant (make faults) a fleet-wide cluster
// upgrade running across the fault.
type scenario struct {
	s             *stack
	load          *workload
	after         int
	orchestration string
	// live are the instances that succeeded before the load (instance ID
	// → tenant).
	live  map[string]string
	fault time.Time
}

// startScenario starts an HA stack of two replicas and its load, and
// returns once the load had its accepts before the fault.
func startScenario(t *testing.T, prefix string, opts stackOptions) *scenario {
	return startScenarioPrepared(t, prefix, opts, nil)
}

// startScenarioPrepared is startScenario with prepare run on the stack
// before anything else.
func startScenarioPrepared(t *testing.T, prefix string, opts stackOptions, prepare func(*stack)) *scenario {
	t.Helper()
	before, after := failoverLoad()
	const bound = 4
	limit := 3 * (before + after)
	opts.replicas, opts.ha = 2, true
	opts.accounts += limit + bound + 10
	s := newStack(t, opts)
	if prepare != nil {
		prepare(s)
	}
	sc := &scenario{s: s, after: after, live: map[string]string{}}
	// Instances that succeeded before the load, bound from its start: the
	// load's own succeed seconds after their accepts, by when the fault has
	// come.
	seeded := s.expectSucceeded(s.provisionMany(prefix+"-bound", bound), 5*time.Minute)
	if long() {
		// Started last, right before the load, so that it is still
		// running when the fault comes.
		sc.orchestration, sc.live = s.startClusterUpgrade()
	}
	maps.Copy(sc.live, seeded)
	// The last 2*after PUTs wait for the fault (faultNow): a machine slow
	// to bind lets the load send every PUT before the load is ready for
	// the fault, and none would be left to be accepted after it.
	sc.load = s.startLoad(prefix, loadShape{limit: limit, workers: 4, pace: 50 * time.Millisecond, binds: true,
		bind: slices.Collect(maps.Keys(seeded)), hold: limit - 2*after})
	s.waitForLoad(sc.load, 2*time.Minute, "accepts and bindings before the fault", func() bool {
		sc.load.mu.Lock()
		bound := len(sc.load.bindings)
		sc.load.mu.Unlock()
		return sc.load.acceptedCount() >= before && bound >= 3
	})
	if sc.orchestration != "" {
		var done, running int
		_ = s.db.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'in progress')
			FROM operations WHERE orchestration_id = $1`, sc.orchestration).Scan(&done, &running)
		t.Logf("at the fault the orchestration had %d upgrades done and %d running", done, running)
	}
	return sc
}

// faultNow marks the fault's moment and lets the load's held PUTs go on:
// they meet the fault.
func (sc *scenario) faultNow() {
	sc.fault = time.Now()
	sc.load.release()
}

// finish waits for the accepts after the promotion, stops the load and
// checks what the scenario promises: every accepted operation succeeded
// once, every binding is there once (or gone, if unbound), the
// orchestration succeeded with each runtime upgraded once, and nothing is
// duplicated or left behind.
func (sc *scenario) finish(promoted time.Time) {
	s := sc.s
	s.t.Helper()
	ops := s.afterFailover(sc.load, sc.fault, promoted, sc.after)
	live := s.expectSucceeded(ops, 5*time.Minute)
	s.expectOnce(ops)
	if sc.orchestration != "" {
		s.expectOrchestrated(sc.orchestration)
	}
	s.expectBindings(sc.load, sc.fault)
	maps.Copy(live, sc.live)
	s.checkInvariants(live)
}

// startClusterUpgrade provisions 10 runtimes and orchestrates a cluster
// upgrade of every runtime, one at a time, so that it is still running when
// the fault comes.
func (s *stack) startClusterUpgrade() (string, map[string]string) {
	s.t.Helper()
	live := s.expectSucceeded(s.provisionMany("orch", 10), 5*time.Minute)
	a, err := s.call(s.running()[0], http.MethodPost, "/upgrade/cluster", `{"targets": {"include": [{"target": "all"}]},
		"kubernetes": {"version": "1.99.0"}, "strategy": {"type": "parallel", "schedule": "immediate", "parallel": {"workers": 1}}}`)
	if err != nil || a.status != http.StatusAccepted {
		s.t.Fatalf("POST /upgrade/cluster: %d %v %v", a.status, a.body, err)
	}
	return a.body["orchestrationID"].(string), live
}

// expectOrchestrated waits for the orchestration to succeed and checks that
// each of its runtimes was upgraded exactly once.
func (s *stack) expectOrchestrated(id string) {
	s.t.Helper()
	waitFor(s.t, 5*time.Minute, "the orchestration to end", func() bool {
		a, err := s.call(s.running()[0], http.MethodGet, "/orchestrations/"+id, "")
		if err != nil || a.status != http.StatusOK {
			return false
		}
		switch a.body["state"] {
		case "succeeded":
			return true
		case "failed", "canceled":
			s.t.Fatalf("orchestration ended %v: %v", a.body["state"], a.body["description"])
		}
		return false
	})
	var targets, instances, succeeded int
	if err := s.db.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT instance_id), count(*) FILTER (WHERE state = 'succeeded')
		FROM operations WHERE orchestration_id = $1`, id).Scan(&targets, &instances, &succeeded); err != nil {
		s.t.Fatal(err)
	}
	if targets == 0 || targets != instances || succeeded != targets {
		s.t.Errorf("orchestration %s: %d upgrade operations of %d runtimes, %d succeeded; want one per runtime, all succeeded",
			id, targets, instances, succeeded)
	}
	s.t.Logf("orchestration across the failover: %d runtimes upgraded once each", targets)
}

// afterFailover waits for after accepts past the promotion, logs the time to
// recover, stops the load and returns what it accepted.
func (s *stack) afterFailover(load *workload, fault, promoted time.Time, after int) []accepted {
	s.t.Helper()
	s.waitForLoad(load, 2*time.Minute, "accepts (and bindings) after the promotion", func() bool {
		n, _ := load.acceptedAfter(promoted)
		return n >= after && (!load.binds || load.bindingsAfter(promoted) >= 2)
	})
	_, first := load.acceptedAfter(promoted)
	s.t.Logf("recovery: promotion %s after the fault; first 202 %s after the promotion (%s after the fault)",
		promoted.Sub(fault).Round(time.Millisecond), first.Sub(promoted).Round(time.Millisecond), first.Sub(fault).Round(time.Millisecond))
	ops := load.stop()
	// The test's own pool still holds connections to the old primary.
	s.db.Reset()
	return ops
}

// expectOnce checks that each accepted instance has exactly one
// provisioning operation, the accepted one, and that it succeeded.
func (s *stack) expectOnce(ops []accepted) {
	s.t.Helper()
	for _, op := range ops {
		var n int
		var id, state string
		err := s.db.QueryRow(context.Background(), `SELECT count(*) OVER (), operation_id, state FROM operations
			WHERE instance_id = $1 AND type = 'provision'`, op.instanceID).Scan(&n, &id, &state)
		switch {
		case err != nil:
			s.t.Errorf("provisioning of %s: %v", op.instanceID, err)
		case n != 1 || id != op.operationID || state != "succeeded":
			s.t.Errorf("instance %s: %d provisioning operations, %s %s; want the accepted %s, succeeded", op.instanceID, n, id, state, op.operationID)
		}
	}
}

// TestFailoverSwitchover is a planned switchover under load: the primary is
// stopped cleanly, the standby promoted, and the old primary rejoins as the
// new primary's synchronous standby, while the load goes on.
func TestFailoverSwitchover(t *testing.T) {
	faultsOnly(t)
	sc := startScenario(t, "switch", stackOptions{})
	sc.faultNow()
	sc.s.ha.Stop(sc.s.ha.Primary())
	sc.s.ha.Promote()
	promoted := time.Now()
	sc.s.ha.Rejoin() // commits wait for the rejoined standby from here on
	sc.finish(promoted)
}

// TestFailoverNetworkCut cuts the primary off (SIGSTOP of all its
// processes: connections stay open and silent, new ones are accepted by the
// kernel and never answered) under load. The failover manager fences it
// (kills it, as STONITH would) and promotes the standby; keb's requests on
// the silent connections end with 503 within the request deadline, and keb
// reconnects to the new primary.
func TestFailoverNetworkCut(t *testing.T) {
	faultsOnly(t)
	// A bind's deadline stays below the request's.
	sc := startScenario(t, "cut", stackOptions{env: []string{"APP_REQUEST_TIMEOUT=5s", "APP_BROKER_BINDING_TIMEOUT=4s"}})
	sc.faultNow()
	old := sc.s.ha.Primary()
	sc.s.ha.Freeze(old)
	time.Sleep(detection)
	sc.s.ha.Kill(old) // fencing: the cut-off primary must never take a write again
	sc.s.ha.Promote()
	sc.finish(time.Now())
	sc.s.ha.Rejoin()
}
