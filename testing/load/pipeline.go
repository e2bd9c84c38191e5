package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

const trialPlanID = "7d55d31d-35ae-4438-bf13-6ffdfa107d9f"

// provisionOne accepts a provisioning of l.planID: a trial (trials use the
// shared account pool, so any number fit) with a global account of its own,
// or any other plan in the one global account l.globalAccount (so that all
// of them share its one pool account). With l.credentials it carries Service
// Manager credentials, so that every operation runs all steps including the
// final injection.
func (l *loader) provisionOne() (instanceID, opID string, err error) {
	id := uuid.NewString()
	ga := l.globalAccount
	if l.planID == trialPlanID {
		ga = "load-ga-" + id
	}
	body := provisionBody(l.planID, ga, l.credentials)
	req, _ := http.NewRequest(http.MethodPut, l.base+"/oauth/v2/service_instances/"+id+"?accepts_incomplete=true", strings.NewReader(body))
	l.headers(req)
	res, err := l.client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != http.StatusAccepted {
		return "", "", fmt.Errorf("provision: %d %v", res.StatusCode, out["description"])
	}
	return id, out["operation"].(string), nil
}

func (l *loader) headers(req *http.Request) {
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("Content-Type", "application/json")
}

// lastOperation returns state and description of an operation.
func (l *loader) lastOperation(instanceID, opID string) (string, string, error) {
	req, _ := http.NewRequest(http.MethodGet, l.base+"/oauth/v2/service_instances/"+instanceID+"/last_operation?operation="+opID, nil)
	l.headers(req)
	res, err := l.client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer res.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(b, &out)
	if res.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("last_operation: %d %s", res.StatusCode, b)
	}
	return fmt.Sprint(out["state"]), fmt.Sprint(out["description"]), nil
}

// op is an accepted operation of an instance.
type op struct{ inst, id string }

// acceptAll accepts n provisionings (provisionOne) from conc clients.
func (l *loader) acceptAll(n, conc int) ([]op, error) {
	ops := make([]op, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, conc)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			inst, id, err := l.provisionOne()
			ops[i], errs[i] = op{inst, id}, err
		}()
	}
	wg.Wait()
	return ops, errors.Join(errs...)
}

// pipeline accepts n provisionings and measures until all have succeeded:
// whole-pipeline throughput.
func (l *loader) pipeline(n, conc int) {
	start := time.Now()
	ops, err := l.acceptAll(n, conc)
	if err != nil {
		fail(err)
	}
	accepted := time.Since(start)
	done := make([]time.Duration, 0, n)
	pending := slices.Clone(ops)
	deadline := time.Now().Add(30 * time.Minute)
	for len(pending) > 0 && time.Now().Before(deadline) {
		var still []op
		for _, o := range pending {
			state, desc, err := l.lastOperation(o.inst, o.id)
			switch {
			case err != nil:
				still = append(still, o)
			case state == "succeeded":
				done = append(done, time.Since(start))
			case state == "failed":
				fail(fmt.Errorf("%s failed: %s", o.inst, desc))
			default:
				still = append(still, o)
			}
		}
		pending = still
		time.Sleep(200 * time.Millisecond)
	}
	total := time.Since(start)
	slices.Sort(done)
	fmt.Printf("pipeline: %d provisionings accepted in %s; %d succeeded in %s: %.2f operations/s; median completion %s\n",
		n, accepted.Round(time.Millisecond), len(done), total.Round(time.Millisecond),
		float64(len(done))/total.Seconds(), done[len(done)/2].Round(time.Millisecond))
}

// waiting accepts n provisionings that end up waiting on slow runtimes
// (start keb dev with a long --runtime-delay), then measures how long new
// provisionings take to get their first step done.
func (l *loader) waiting(n, conc, samples int) {
	ops, err := l.acceptAll(n, conc)
	if err != nil {
		fail(err)
	}
	// Wait until every one of them waits for its cluster.
	deadline := time.Now().Add(20 * time.Minute)
	for {
		waitingN := 0
		for _, o := range ops {
			_, desc, err := l.lastOperation(o.inst, o.id)
			if err == nil && strings.HasPrefix(desc, "Waiting for the cluster") {
				waitingN++
			}
		}
		fmt.Printf("waiting: %d/%d operations wait on their cluster\n", waitingN, n)
		if waitingN == n {
			break
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("only %d of %d operations reached the wait", waitingN, n))
		}
		time.Sleep(2 * time.Second)
	}
	var lat []time.Duration
	for range samples {
		t0 := time.Now()
		inst, id, err := l.provisionOne()
		if err != nil {
			fail(err)
		}
		for {
			_, desc, err := l.lastOperation(inst, id)
			if err == nil && !strings.HasPrefix(desc, "Provisioning accepted") {
				lat = append(lat, time.Since(t0))
				break
			}
			if time.Since(t0) > time.Minute {
				fail(fmt.Errorf("first step of %s not done after a minute", inst))
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(lat)
	fmt.Printf("waiting: with %d operations waiting, a new provisioning's first step finished after p50=%s p90=%s max=%s (%d samples)\n",
		n, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), len(lat))
}
