package faults

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestReplicaKill provisions 100 runtimes over two replicas and kills one
// with SIGKILL while it runs operations. The operations it was running are
// taken over by the other replica (the time this takes is measured and
// logged: docs/performance.md records it), all 100 succeed once, with one
// Runtime and one Kyma CR per instance and one account per tenant. River's
// own rescue is left at its default (2 min), so the takeover measured is
// keb's.
func TestReplicaKill(t *testing.T) {
	s := newStack(t, stackOptions{replicas: 2, accounts: 100, delay: 3 * time.Second})
	victim := s.replicas[0]
	victimID := victim.queueID(t)
	ops := s.provisionMany("kill", 100)

	// Kill the victim while it runs operations.
	waitFor(t, 2*time.Minute, "the victim running operations", func() bool {
		if len(s.runningOn(victim)) == 0 {
			return false
		}
		victim.kill()
		return true
	})
	killed := time.Now()
	// Only jobs still shown running on the victim after its death are
	// orphans (the kill may have landed after some finished).
	orphans := s.runningOn(victim)
	t.Logf("killed %s with SIGKILL running %d operations", victim.name, len(orphans))

	var takeover time.Duration
	waitFor(t, 5*time.Minute, "every orphaned operation taken over", func() bool {
		var left int
		if err := s.db.QueryRow(t.Context(), `SELECT count(*) FROM river_job WHERE id = any($1) AND state = 'running'
			AND attempted_by[array_length(attempted_by, 1)] = $2`, orphans, victimID).Scan(&left); err != nil {
			return false
		}
		takeover = time.Since(killed)
		return left == 0
	})
	if len(orphans) > 0 {
		t.Logf("TAKEOVER: %d operations of the killed replica resumed within %s of the kill", len(orphans), takeover.Round(100*time.Millisecond))
	}
	victim.start(t)

	live := s.expectSucceeded(ops, 8*time.Minute)
	s.checkInvariants(live)
	held := s.claimedAccounts()
	for id, ga := range live {
		if held[ga] != 1 {
			t.Errorf("tenant %s of instance %s holds %d accounts, want 1", ga, id, held[ga])
		}
	}
}

// TestReplicaSIGTERM stops a replica with SIGTERM while it runs operations:
// it stops taking work, lets the running steps finish (none is cancelled
// mid-way), and exits; the other replica finishes every operation.
func TestReplicaSIGTERM(t *testing.T) {
	s := newStack(t, stackOptions{replicas: 2, accounts: 40, delay: 2 * time.Second})
	victim := s.replicas[0]
	ops := s.provisionMany("term", 40)
	waitFor(t, 2*time.Minute, "the victim running operations", func() bool {
		if len(s.runningOn(victim)) == 0 {
			return false
		}
		victim.stop() // SIGTERM, and wait for the exit
		return true
	})
	log, err := os.ReadFile(victim.log.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "context canceled") {
			t.Errorf("a step was cancelled by SIGTERM: %s", line)
		}
	}
	if !strings.Contains(string(log), "workers stopped; every running step finished") {
		t.Errorf("the replica did not report its running steps finished:\n%s", log)
	}
	s.checkInvariants(s.expectSucceeded(ops, 5*time.Minute))
}
