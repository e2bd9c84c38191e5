package deprovisioning_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/avssim"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// avsFixture is the engine fixture with the AVS step in the pipeline and
// two evaluations, as a provisioning created them, in an AVS stand-in.
type avsFixture struct {
	*engineFixture
	sim    *avssim.Server
	client *avs.Client
	rec    avs.Record
}

func newAVSFixture(t *testing.T) *avsFixture {
	t.Helper()
	f := newEngineFixture(t)
	sim := avssim.New(avssim.Options{ClientID: "cid", Username: "user", Password: "pw", Parents: []int64{40}})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := avs.Config{APIEndpoint: srv.URL + avssim.APIPath, OAuthTokenEndpoint: srv.URL + avssim.TokenPath,
		OAuthClientID: "cid", OAuthUsername: "user", OAuthPassword: "pw",
		InternalTesterAccessID: 40, ExternalTesterAccessID: 40, GroupID: 40, ParentID: 40}
	client := avs.NewClient(cfg, srv.Client(), nil)
	var rec avs.Record
	rt := avs.Runtime{InstanceID: "i", InstanceName: "n", PlanName: "azure", Domain: "c.example.com"}
	for _, kind := range []avs.Kind{avs.Internal, avs.External} {
		ev, err := client.CreateEvaluation(f.ctx, cfg.NewCreateRequest(kind, rt))
		if err != nil {
			t.Fatalf("creating the %s evaluation: %v", kind, err)
		}
		rec.Set(kind, &avs.Created{ID: ev.ID, Parent: 40})
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	f.engine = process.NewEngine(f.store, map[storage.OperationType]process.Pipeline{
		storage.OperationTypeDeprovision: deprovisioning.Pipeline(deprovisioning.Deps{Store: f.store, AVS: client}),
	}, log)
	return &avsFixture{engineFixture: f, sim: sim, client: client, rec: rec}
}

// deprovisioning is one whose provisioning recorded the fixture's
// evaluations; the steps needing a control plane are finished, the
// initialization and the AVS step are not. data is the deprovisioning's
// own record so far.
func (f *avsFixture) deprovisioning(instanceID string, data process.Record) string {
	f.t.Helper()
	opID := f.engineFixture.deprovisioning(instanceID, false, teardownSteps[1:]...)
	prov, _ := json.Marshal(process.Record{AVS: &f.rec})
	f.exec(`UPDATE operations SET data = $2 WHERE instance_id = $1 AND type = 'provision'`, instanceID, prov)
	own, _ := json.Marshal(data)
	f.exec(`UPDATE operations SET data = $2 WHERE operation_id = $1`, opID, own)
	return opID
}

func (f *avsFixture) left() []int64 {
	var ids []int64
	for id := range f.sim.Evaluations() {
		if id != 40 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// TestRemoveAVSEvaluationsInEngine runs the deprovisioning with the engine
// on real PostgreSQL against the AVS stand-in: it detaches and deletes what
// the provisioning created, internal first, and archives the instance; an
// AVS that stays down past the minute's retries is skipped, with the
// evaluations listed as a leftover that the leftovers job removes later.
func TestRemoveAVSEvaluationsInEngine(t *testing.T) {
	t.Parallel()

	t.Run("removes what provisioning created", func(t *testing.T) {
		t.Parallel()
		f := newAVSFixture(t)
		opID := f.deprovisioning("inst-avs", process.Record{})
		before := len(f.sim.Requests())
		f.process(opID)
		if left := f.left(); len(left) != 0 {
			t.Errorf("evaluations %v left in AVS", left)
		}
		var calls []string
		for _, r := range f.sim.Requests()[before:] {
			calls = append(calls, r.Method+" "+r.Path)
		}
		in, ex := f.rec.Internal.ID, f.rec.External.ID
		want := []string{
			"DELETE " + avssim.APIPath + "/40/child/" + itoa(in), "DELETE " + avssim.APIPath + "/" + itoa(in),
			"DELETE " + avssim.APIPath + "/40/child/" + itoa(ex), "DELETE " + avssim.APIPath + "/" + itoa(ex),
		}
		if !slices.Equal(calls, want) {
			t.Errorf("AVS calls %q, want %q", calls, want)
		}
		a, err := f.store.Archived(f.ctx, "inst-avs")
		if err != nil || len(a.Leftovers) != 0 {
			t.Errorf("archive %+v, %v; want archived with no leftovers", a, err)
		}
	})

	t.Run("AVS down: skipped with a leftover, removed later", func(t *testing.T) {
		t.Parallel()
		f := newAVSFixture(t)
		// The step's minute of retries is over when AVS answers 503 again.
		started := time.Now().Add(-2 * time.Minute)
		opID := f.deprovisioning("inst-avs-down", process.Record{StepStartedAt: map[string]time.Time{"remove_avs_evaluations": started}})
		f.sim.FailNext(1, http.StatusServiceUnavailable)
		f.process(opID)
		if left := f.left(); len(left) != 2 {
			t.Fatalf("evaluations %v in AVS, want both still there", left)
		}
		a, err := f.store.Archived(f.ctx, "inst-avs-down")
		if err != nil {
			t.Fatalf("Archived: %v", err)
		}
		var lo []process.Leftover
		if err := json.Unmarshal(a.Leftovers, &lo); err != nil || len(lo) != 1 || lo[0].Step != "remove_avs_evaluations" ||
			lo[0].Category != process.CategoryAVS || len(lo[0].Refs) != 2 {
			t.Fatalf("leftovers %s, want the AVS step's with both evaluations", a.Leftovers)
		}
		job := &deprovisioning.Leftovers{Store: f.store, AVS: f.client}
		res, err := job.Run(f.ctx)
		if err != nil || res.Resolved != 1 || res.Remaining != 0 {
			t.Errorf("leftovers job: %+v, %v; want the AVS leftover resolved", res, err)
		}
		if left := f.left(); len(left) != 0 {
			t.Errorf("evaluations %v left in AVS after the leftovers job", left)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
