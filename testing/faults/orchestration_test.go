package faults

import (
	"context"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// TestOrchestrationSurvivesSIGKILL provisions 50 runtimes over two replicas,
// orchestrates a cluster upgrade of all of them with 10 workers, and kills
// the replica that last ran the orchestration's scheduler with SIGKILL while
// upgrades are in flight. The other replica resumes the orchestration; it
// ends succeeded, every runtime has exactly one upgrade operation, and each
// Runtime CR's spec changed exactly once (its generation moved by one) to
// the new Kubernetes version, applied (Ready). (A cluster upgrade, not a
// Kyma one: a Kyma upgrade waits on no Runtime CR, and ends too quickly to
// be caught in flight.)
func TestOrchestrationSurvivesSIGKILL(t *testing.T) {
	const n, version = 50, "1.99.0"
	s := newStack(t, stackOptions{replicas: 2, accounts: n, delay: time.Second,
		env: []string{"APP_ORCHESTRATION_POLL=200ms", "APP_WORKER_TAKEOVER_AFTER=3s"}})
	ctx := context.Background()
	live := s.expectSucceeded(s.provisionMany("up", n), 8*time.Minute)

	before := map[string]int64{}
	var rts infrastructuremanager.RuntimeList
	if err := s.kc.List(ctx, &rts, client.InNamespace(kcpNS)); err != nil {
		t.Fatal(err)
	}
	for _, rt := range rts.Items {
		before[rt.Name] = rt.Generation
	}
	if len(before) != n {
		t.Fatalf("%d Runtime CRs, want %d", len(before), n)
	}

	a, err := s.call(s.replicas[1], http.MethodPost, "/upgrade/cluster", `{"targets": {"include": [{"target": "all"}]},
		"kubernetes": {"version": "`+version+`"}, "strategy": {"type": "parallel", "schedule": "immediate", "parallel": {"workers": 10}}}`)
	if err != nil || a.status != http.StatusAccepted {
		t.Fatalf("POST /upgrade/kyma: %d %v %v", a.status, a.body, err)
	}
	id := a.body["orchestrationID"].(string)

	// Kill the replica that last ran the scheduler, once upgrades run and
	// some have finished: mid-orchestration.
	var victim *replica
	waitFor(t, 2*time.Minute, "upgrades in flight", func() bool {
		var done, running int
		if err := s.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'in progress')
			FROM operations WHERE orchestration_id = $1`, id).Scan(&done, &running); err != nil || done < 5 || running == 0 {
			return false
		}
		var last string
		if err := s.db.QueryRow(ctx, `SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job
			WHERE kind = 'keb_orchestration' AND args ->> 'orchestration_id' = $1`, id).Scan(&last); err != nil {
			return false
		}
		for _, r := range s.replicas {
			if r.queueID(t) == last {
				victim = r
			}
		}
		if victim == nil {
			return false
		}
		victim.kill()
		t.Logf("killed %s (the scheduler's last replica) with %d upgrades done and %d running", victim.name, done, running)
		return true
	})
	time.Sleep(5 * time.Second)
	victim.start(t)

	waitFor(t, 5*time.Minute, "the orchestration to end", func() bool {
		a, err := s.call(s.running()[0], http.MethodGet, "/orchestrations/"+id, "")
		if err != nil || a.status != http.StatusOK {
			return false
		}
		switch a.body["state"] {
		case "succeeded":
			return true
		case "failed", "canceled":
			t.Fatalf("orchestration ended %v: %v", a.body["state"], a.body["description"])
		}
		return false
	})

	rows, err := s.db.Query(ctx, `SELECT i.instance_id, count(o.operation_id), count(*) FILTER (WHERE o.state = 'succeeded')
		FROM instances i LEFT JOIN operations o ON o.instance_id = i.instance_id AND o.type = 'upgrade_cluster'
		GROUP BY i.instance_id`)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var inst string
		var ops, ok int
		if err := rows.Scan(&inst, &ops, &ok); err != nil {
			t.Fatal(err)
		}
		seen++
		if ops != 1 || ok != 1 {
			t.Errorf("instance %s has %d upgrade operations (%d succeeded), want exactly 1", inst, ops, ok)
		}
	}
	if seen != n {
		t.Errorf("%d instances, want %d", seen, n)
	}
	if err := s.kc.List(ctx, &rts, client.InNamespace(kcpNS)); err != nil {
		t.Fatal(err)
	}
	for _, rt := range rts.Items {
		if v := rt.Spec.Shoot.Kubernetes.Version; v == nil || *v != version || rt.Generation != before[rt.Name]+1 ||
			rt.Status.State != infrastructuremanager.StateReady {
			t.Errorf("Runtime %s: Kubernetes %v, generation %d (was %d), status %+v", rt.Name, v,
				rt.Generation, before[rt.Name], rt.Status)
		}
	}
	s.checkInvariants(live)
}
