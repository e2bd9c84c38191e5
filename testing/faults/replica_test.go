package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/process"
)

// TestReplicaKill provisions 100 runtimes over two replicas and kills one
// with SIGKILL while it runs operations. The operations it was running are
// taken over by the other replica (the time this takes is measured and
// logged: docs/performance.md records it), all 100 succeed once, with one
// Runtime and one Kyma CR per instance and one account per tenant. River's
// own rescue is left at its default (2 min), so the takeover measured is
// keb's.
func TestReplicaKill(t *testing.T) {
	const instances = 100
	s := newStack(t, stackOptions{replicas: 2, accounts: instances, delay: 3 * time.Second})
	victim := s.replicas[0]
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	victimID := process.ClientIDOf(host, victim.cmd.Process.Pid)

	var (
		mu  sync.Mutex
		ops []accepted
		wg  sync.WaitGroup
		sem = make(chan struct{}, 20)
	)
	for i := range instances {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := fmt.Sprintf("kill-%03d", i)
			a, err := s.provision(s.replicas[i%2], id, "ga-"+id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || a.status != http.StatusAccepted {
				t.Errorf("PUT %s: %d %v %v", id, a.status, a.body, err)
				return
			}
			ops = append(ops, accepted{id, a.body["operation"].(string), "provision"})
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Kill the victim while it runs operations.
	ctx := context.Background()
	var orphans []int64
	waitFor(t, 2*time.Minute, "the victim running operations", func() bool {
		rows, err := s.db.Query(ctx, `SELECT id FROM river_job WHERE kind = 'keb_operation' AND state = 'running'
			AND attempted_by[array_length(attempted_by, 1)] = $1`, victimID)
		if err != nil {
			return false
		}
		defer rows.Close()
		orphans = orphans[:0]
		for rows.Next() {
			var id int64
			if rows.Scan(&id) == nil {
				orphans = append(orphans, id)
			}
		}
		if len(orphans) == 0 {
			return false
		}
		victim.kill()
		return true
	})
	killed := time.Now()
	// The kill may have landed after some of them finished: only jobs still
	// shown as running on the victim after its death are orphans.
	var stuck []int64
	for _, id := range orphans {
		var running bool
		if err := s.db.QueryRow(ctx, `SELECT state = 'running' AND attempted_by[array_length(attempted_by, 1)] = $2
			FROM river_job WHERE id = $1`, id, victimID).Scan(&running); err == nil && running {
			stuck = append(stuck, id)
		}
	}
	t.Logf("killed %s with SIGKILL running %d operations", victim.name, len(stuck))

	var takeover time.Duration
	waitFor(t, 5*time.Minute, "every orphaned operation taken over", func() bool {
		var left int
		if err := s.db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE id = any($1) AND state = 'running'
			AND attempted_by[array_length(attempted_by, 1)] = $2`, stuck, victimID).Scan(&left); err != nil {
			return false
		}
		takeover = time.Since(killed)
		return left == 0
	})
	if len(stuck) > 0 {
		t.Logf("TAKEOVER: %d operations of the killed replica resumed within %s of the kill", len(stuck), takeover.Round(100*time.Millisecond))
	}
	victim.start(t)

	final := s.waitFinal(ops, 8*time.Minute)
	live := map[string]string{}
	for _, op := range ops {
		if final[op.operationID] != "succeeded" {
			t.Errorf("provisioning of %s: %s", op.instanceID, final[op.operationID])
		}
		live[op.instanceID] = "ga-" + op.instanceID
	}
	s.checkInvariants(live)
	s.checkOneAccountEach(live)
}

// checkOneAccountEach asserts that every live instance's tenant holds
// exactly one account.
func (s *stack) checkOneAccountEach(live map[string]string) {
	s.t.Helper()
	held := s.claimedAccounts()
	for id, ga := range live {
		if held[ga] != 1 {
			s.t.Errorf("tenant %s of instance %s holds %d accounts, want 1", ga, id, held[ga])
		}
	}
}

// TestReplicaSIGTERM stops a replica with SIGTERM while it runs operations:
// it stops taking work, lets the running steps finish (none is cancelled
// mid-way), and exits; the other replica finishes every operation.
func TestReplicaSIGTERM(t *testing.T) {
	const instances = 40
	s := newStack(t, stackOptions{replicas: 2, accounts: instances, delay: 2 * time.Second})
	victim := s.replicas[0]
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	victimID := process.ClientIDOf(host, victim.cmd.Process.Pid)
	var ops []accepted
	for i := range instances {
		id := fmt.Sprintf("term-%03d", i)
		a, err := s.provision(s.replicas[i%2], id, "ga-"+id)
		if err != nil || a.status != http.StatusAccepted {
			t.Fatalf("PUT %s: %d %v %v", id, a.status, a.body, err)
		}
		ops = append(ops, accepted{id, a.body["operation"].(string), "provision"})
	}
	waitFor(t, 2*time.Minute, "the victim running operations", func() bool {
		var n int
		if err := s.db.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'keb_operation'
			AND state = 'running' AND attempted_by[array_length(attempted_by, 1)] = $1`, victimID).Scan(&n); err != nil || n == 0 {
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
	final := s.waitFinal(ops, 5*time.Minute)
	live := map[string]string{}
	for _, op := range ops {
		if final[op.operationID] != "succeeded" {
			t.Errorf("provisioning of %s: %s", op.instanceID, final[op.operationID])
		}
		live[op.instanceID] = "ga-" + op.instanceID
	}
	s.checkInvariants(live)
}
