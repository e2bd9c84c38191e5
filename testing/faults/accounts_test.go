package faults

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestLastInstancesAndUnbindsAcrossReplicas drives two replicas at once as a platform does
// (issue 38 B and C): a global account's three instances, bound once, are torn down together
// (the binding's DELETE sent to both replicas at the same moment, then each instance's DELETE
// to a replica in turn). Exactly one unbind answers 200 and the other 410; the global account's
// account ends released (dirty), none stays claimed without an instance. The unbinds failed
// before the fix (both 200); the teardown did not (its releases rarely overlap here, the
// simulated infrastructure manager finishing the deletions apart): B's failing test is
// internal/process/provisioning's TestLastInstancesDeprovisionedAtOnceReleaseTheAccount.
func TestLastInstancesAndUnbindsAcrossReplicas(t *testing.T) {
	faultsOnly(t)
	const instances = 3
	s := newStack(t, stackOptions{replicas: 2, accounts: 4, delay: time.Second})
	ga := "ga-last-out"
	ops := make([]accepted, instances)
	for i := range instances {
		id := fmt.Sprintf("last-out-%d", i)
		a, err := s.provision(s.replicas[i%2], id, ga)
		if err != nil || a.status != http.StatusAccepted {
			t.Fatalf("PUT %s: %d %v %v", id, a.status, a.body, err)
		}
		ops[i] = accepted{id, a.body["operation"].(string), "provision"}
	}
	provisioned := s.waitFinal(ops, 5*time.Minute)
	for _, op := range ops {
		if provisioned[op.operationID] != "succeeded" {
			t.Fatalf("provisioning of %s: %s", op.instanceID, provisioned[op.operationID])
		}
	}

	// One binding, unbound through both replicas at once.
	path := bindingPath(ops[0].instanceID, "unbind-twice")
	if a, err := s.call(s.replicas[0], http.MethodPut, path, fmt.Sprintf(`{"service_id": %q, "plan_id": %q}`, serviceID, azurePlanID)); err != nil ||
		a.status != http.StatusCreated {
		t.Fatalf("bind: %d %v %v", a.status, a.body, err)
	}
	query := fmt.Sprintf("?service_id=%s&plan_id=%s", serviceID, azurePlanID)
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range s.replicas {
		wg.Go(func() {
			<-start
			a, err := s.call(r, http.MethodDelete, path+query, "")
			if err != nil {
				t.Errorf("unbind on %s: %v", r.name, err)
			}
			statuses[i] = a.status
		})
	}
	close(start)
	wg.Wait()
	if !(statuses[0] == http.StatusOK && statuses[1] == http.StatusGone) && !(statuses[0] == http.StatusGone && statuses[1] == http.StatusOK) {
		t.Errorf("two concurrent unbinds answered %v, want one 200 and one 410", statuses)
	}

	// The global account's instances deprovisioned at once, through both replicas.
	dels := make([]accepted, instances)
	start = make(chan struct{})
	for i, op := range ops {
		wg.Go(func() {
			<-start
			a, err := s.deprovision(s.replicas[i%2], op.instanceID)
			if err != nil || a.status != http.StatusAccepted {
				t.Errorf("DELETE %s: %d %v %v", op.instanceID, a.status, a.body, err)
				return
			}
			dels[i] = accepted{op.instanceID, a.body["operation"].(string), "deprovision"}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	final := s.waitFinal(dels, 5*time.Minute)
	for _, op := range dels {
		if final[op.operationID] != "succeeded" {
			t.Errorf("deprovisioning of %s: %s", op.instanceID, final[op.operationID])
		}
	}
	if n := s.claimedAccounts()[ga]; n != 0 {
		t.Errorf("global account %s, all of whose instances are gone, still holds %d claimed accounts", ga, n)
	}
	s.checkInvariants(map[string]string{})
}
