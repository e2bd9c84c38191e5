package faults

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestDeleteRacingPut sends 200 provisionings, each followed at a random
// moment (0-400 ms later, often while its account is being claimed) by a
// DELETE through the other replica. Every DELETE is accepted and succeeds,
// and no account stays claimed: the halted provisioning's claim is found by
// label, whether or not it was recorded.
func TestDeleteRacingPut(t *testing.T) {
	const races = 200
	s := newStack(t, stackOptions{replicas: 2, accounts: races + 10, delay: time.Second})
	var (
		mu   sync.Mutex
		ops  []accepted
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 20)
		errs []string
	)
	for i := range races {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id, ga := fmt.Sprintf("race-%03d", i), fmt.Sprintf("ga-race-%03d", i)
			put, err := s.provision(s.replicas[i%2], id, ga)
			if err != nil || put.status != http.StatusAccepted {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("PUT %s: %d %v %v", id, put.status, put.body, err))
				mu.Unlock()
				return
			}
			time.Sleep(time.Duration(rand.IntN(400)) * time.Millisecond)
			del, err := s.deprovision(s.replicas[(i+1)%2], id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || del.status != http.StatusAccepted {
				errs = append(errs, fmt.Sprintf("DELETE %s: %d %v %v", id, del.status, del.body, err))
				return
			}
			ops = append(ops, accepted{id, del.body["operation"].(string), "deprovision"})
		}()
	}
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}
	final := s.waitFinal(ops, 10*time.Minute)
	for _, op := range ops {
		if final[op.operationID] != "succeeded" {
			t.Errorf("deprovisioning of %s: %s", op.instanceID, final[op.operationID])
		}
	}
	s.checkInvariants(map[string]string{})
}
