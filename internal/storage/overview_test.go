package storage_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

// The overview counts what the console's overview page shows: runtimes by
// state, operations per hour, failures by step and component (of the
// window and of the runtimes failed now), step and provisioning durations,
// and parameter usage.
func TestOverview(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.provision("ov-ok", "ga-1", "azure", "op-ok")
	f.provision("ov-bad", "ga-1", "aws", "op-bad")
	f.provision("ov-run", "ga-2", "azure", "op-run")
	f.exec(`UPDATE instances SET parameters = '{"name":"x","machineType":"m"}' WHERE instance_id = 'ov-ok'`)
	t0 := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	at := func(s int) string { return t0.Add(time.Duration(s) * time.Second).Format(time.RFC3339) }
	f.exec(`UPDATE operations SET created_at = $1, finished_at = $2, state = 'succeeded',
		data = jsonb_build_object('stepStartedAt', jsonb_build_object('start', $3::text, 'create_runtime', $4::text, 'check_runtime', $5::text))
		WHERE operation_id = 'op-ok'`, t0, t0.Add(100*time.Second), at(0), at(10), at(40))
	f.exec(`UPDATE operations SET created_at = $1, finished_at = $2, state = 'failed', stage = 'check_runtime',
		error_message = 'the cluster did not come up', data = '{"errorCategory":"infrastructure-manager"}'
		WHERE operation_id = 'op-bad'`, t0, t0.Add(time.Hour))
	f.exec(`UPDATE instances SET state = 'succeeded' WHERE instance_id = 'ov-ok'`)
	f.exec(`UPDATE instances SET state = 'failed' WHERE instance_id = 'ov-bad'`)
	// An operation before the window counts in no figure of it.
	f.provision("ov-old", "ga-3", "gcp", "op-old")
	f.exec(`UPDATE operations SET created_at = now() - interval '3 days', state = 'failed', finished_at = now() - interval '3 days',
		stage = 'apply_kyma' WHERE operation_id = 'op-old'`)

	o, err := f.store.Overview(f.ctx, time.Now().Add(-24*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, r := range o.Runtimes {
		states[r.Plan+"/"+r.State] += r.N
	}
	if states["azure/succeeded"] != 1 || states["aws/failed"] != 1 || states["azure/provisioning"] != 1 || states["gcp/provisioning"] != 1 || o.Instances != 4 {
		t.Errorf("runtimes: %v, %d instances", states, o.Instances)
	}
	byState := map[string]int{}
	for _, b := range o.Operations {
		byState[b.State] += b.N
		if b.Start.After(time.Now()) || b.Start.Before(time.Now().Add(-25*time.Hour)) {
			t.Errorf("bucket outside the window: %+v", b)
		}
	}
	if byState["succeeded"] != 1 || byState["failed"] != 1 || byState["in progress"] != 1 {
		t.Errorf("operations per hour by state: %v (%+v)", byState, o.Operations)
	}
	want := []storage.FailureCount{{Step: "check_runtime", Category: "infrastructure-manager", N: 1, Example: "the cluster did not come up"}}
	if !slices.Equal(o.Failures, want) {
		t.Errorf("failures of the window: %+v", o.Failures)
	}
	if !slices.Equal(o.FailedRuntimes, want) {
		t.Errorf("failed runtimes: %+v", o.FailedRuntimes)
	}
	steps := map[string]float64{}
	for _, s := range o.Steps {
		steps[s.Step] = s.P50
	}
	if len(steps) != 3 || steps["start"] != 10 || steps["create_runtime"] != 30 || steps["check_runtime"] != 60 {
		t.Errorf("step durations: %+v", o.Steps)
	}
	if o.Provisioning.Count != 1 || o.Provisioning.P50 != 100 || o.Provisioning.P99 != 100 {
		t.Errorf("provisioning durations: %+v", o.Provisioning)
	}
	params := map[string]int{}
	for _, p := range o.Parameters {
		params[p.Name] = p.N
	}
	if params["name"] != 4 || params["machineType"] != 1 || len(params) != 2 {
		t.Errorf("parameters: %v", params)
	}
}
