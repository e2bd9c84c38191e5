package storage_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

// kymaOf reads what an instance row holds of its Kyma CR.
func (f *fixture) kymaOf(instanceID string) (state *string, modules string) {
	f.t.Helper()
	var m []byte
	if err := f.pool.QueryRow(f.ctx, `SELECT kyma_state, kyma_modules FROM instances WHERE instance_id = $1`, instanceID).Scan(&state, &m); err != nil {
		f.t.Fatal(err)
	}
	return state, string(m)
}

// TestSetKymaStates: states reach the instances of their runtimes; a state
// older than the stored one is not written over it (a replica whose watch
// lags), a deletion always is; nothing changes without a difference; a
// runtime of no instance is ignored. GET instance reads them with the
// instance, the listing shows and filters on them, the census counts them.
func TestSetKymaStates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	for _, id := range []string{"i-1", "i-2"} {
		f.provision(id, "ga", "azure", "op-"+id)
		f.exec(`UPDATE instances SET runtime_id = $2 WHERE instance_id = $1`, id, "rt-"+id)
	}
	modules := json.RawMessage(`[{"name":"foo","state":"Error","message":"module template for module \"foo\" not found"}]`)
	n, err := f.store.SetKymaStates(f.ctx, []storage.KymaState{
		{RuntimeID: "rt-i-1", State: "Error", Modules: modules, Version: 20},
		{RuntimeID: "rt-i-2", State: "Processing", Modules: json.RawMessage(`[]`), Version: 10},
		{RuntimeID: "rt-of-no-instance", State: "Ready", Modules: json.RawMessage(`[]`), Version: 5},
	})
	if err != nil || n != 2 {
		t.Fatalf("SetKymaStates: %d rows, %v; want 2", n, err)
	}
	inst, err := f.store.Instance(f.ctx, "i-1")
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(inst.KymaModules, &got)
	_ = json.Unmarshal(modules, &want)
	if inst.KymaState == nil || *inst.KymaState != "Error" || !reflect.DeepEqual(got, want) {
		t.Errorf("instance i-1: Kyma %v %s", inst.KymaState, inst.KymaModules)
	}

	// An older state (a lagging replica), and the same state again: no write.
	n, err = f.store.SetKymaStates(f.ctx, []storage.KymaState{
		{RuntimeID: "rt-i-1", State: "Processing", Modules: json.RawMessage(`[]`), Version: 19},
		{RuntimeID: "rt-i-2", State: "Processing", Modules: json.RawMessage(`[]`), Version: 11},
	})
	if err != nil || n != 0 {
		t.Fatalf("older and unchanged states: %d rows written, %v; want 0", n, err)
	}
	if st, _ := f.kymaOf("i-1"); st == nil || *st != "Error" {
		t.Errorf("i-1 is %v after an older state, want Error", st)
	}

	page, err := f.store.Runtimes(f.ctx, storage.RuntimeQuery{KymaStates: []string{"Error"}})
	if err != nil || page.Total != 1 || len(page.Runtimes) != 1 || page.Runtimes[0].InstanceID != "i-1" || page.Runtimes[0].KymaState != "Error" {
		t.Fatalf("kyma_state=Error: %+v, %v", page, err)
	}
	census, err := f.store.TakeCensus(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, c := range census.KymaStates {
		counts[c.Kind] += c.Count
	}
	if counts["Error"] != 1 || counts["Processing"] != 1 || len(counts) != 2 {
		t.Errorf("census of Kyma states %v", counts)
	}

	// A deletion, even seen at an older version, empties the columns; a
	// state older than the deletion does not come back.
	if _, err := f.store.SetKymaStates(f.ctx, []storage.KymaState{{RuntimeID: "rt-i-1", Version: 18}}); err != nil {
		t.Fatal(err)
	}
	if st, m := f.kymaOf("i-1"); st != nil || m != "" {
		t.Errorf("after the deletion: %v %q, want NULLs", st, m)
	}
	if _, err := f.store.SetKymaStates(f.ctx, []storage.KymaState{{RuntimeID: "rt-i-1", State: "Ready", Modules: json.RawMessage(`[]`), Version: 17}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.kymaOf("i-1"); st != nil {
		t.Errorf("a state older than the deletion came back: %v", *st)
	}
	// "" (Lifecycle Manager has not reported yet) is no state.
	if _, err := f.store.SetKymaStates(f.ctx, []storage.KymaState{{RuntimeID: "rt-i-2", Modules: json.RawMessage(`[]`), Version: 30}}); err != nil {
		t.Fatal(err)
	}
	if st, m := f.kymaOf("i-2"); st != nil || m != "[]" {
		t.Errorf("not reported yet: %v %q, want NULL and []", st, m)
	}
}

// TestSetKymaStatesOfTwoReplicasDoNotDeadlock: two replicas' watches record
// the same runtimes' states at once, each in its own order (as their
// informers deliver them); neither may fail with a deadlock.
func TestSetKymaStatesOfTwoReplicasDoNotDeadlock(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	const n = 150
	var forward, backward []string
	for i := range n {
		id := fmt.Sprintf("i-%03d", i)
		f.provision(id, "ga-"+id, "azure", "op-"+id)
		f.exec(`UPDATE instances SET runtime_id = $2 WHERE instance_id = $1`, id, "rt-"+id)
		forward = append(forward, "rt-"+id)
	}
	for i := n - 1; i >= 0; i-- {
		backward = append(backward, forward[i])
	}
	record := func(ids []string, round int) error {
		states := make([]storage.KymaState, len(ids))
		for i, id := range ids {
			// Every round changes every row: a state keb has not stored.
			states[i] = storage.KymaState{RuntimeID: id, State: fmt.Sprintf("Processing-%d-%d", round, i%7), Modules: json.RawMessage(`[]`)}
		}
		_, err := f.store.SetKymaStates(f.ctx, states)
		return err
	}
	errs := make(chan error, 2)
	for _, ids := range [][]string{forward, backward} {
		go func() {
			for round := range 25 {
				if err := record(ids, round); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("recording Kyma states: %v", err)
		}
	}
}
