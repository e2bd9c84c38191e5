package deprovisioning_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/iassim"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestIASDeregistration runs the step against the stand-in: it removes the
// runtime's service provider (found by its display name) and no other; a
// re-run, or a runtime never registered, is done at once; IAS down is
// retried, a refusal skips the step (it never fails a deprovisioning).
func TestIASDeregistration(t *testing.T) {
	t.Parallel()
	sim := iassim.New("keb", "s3cret", "corporate-idp")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	client := ias.NewClient(ias.Config{URL: srv.URL, UserID: "keb", UserSecret: "s3cret"}, srv.Client(), nil)
	op := processtest.Operation(storage.OperationTypeDeprovision, processtest.Instance(t, catalog.AWSPlanID))
	for _, id := range []string{op.InstanceID, "another-instance"} {
		if err := client.CreateServiceProvider(t.Context(), ias.DisplayName(id)); err != nil {
			t.Fatal(err)
		}
	}
	step := &deprovisioning.IASDeregistration{IAS: client}
	if _, ok := process.Step(step).(process.SkippableStep); !ok {
		t.Fatalf("the deregistration is not skippable")
	}
	sim.FailNext(1, http.StatusInternalServerError)
	if _, err := step.Run(t.Context(), op); err == nil {
		t.Errorf("500: no error to retry")
	}
	sim.FailNext(1, http.StatusUnauthorized)
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "401", processtest.Failure, res, err)
	id := sim.ServiceProviders()[ias.DisplayName(op.InstanceID)].ID
	n := len(sim.Requests())
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "removal", processtest.Done, res, err)
	reqs := sim.Requests()[n:]
	if len(reqs) != 2 || reqs[0].Path != "/service/company/global" || reqs[1].Method != http.MethodPut ||
		reqs[1].Path != "/service/sps/delete" || reqs[1].Query != "sp_id="+id || reqs[1].Body != "" {
		t.Errorf("requests %+v", reqs)
	}
	left := sim.ServiceProviders()
	if _, ok := left[ias.DisplayName("another-instance")]; len(left) != 1 || !ok {
		t.Errorf("service providers left %v, want another-instance's only", left)
	}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
	if got := len(sim.Requests()) - n; got != 3 {
		t.Errorf("a re-run made %d calls, want one look-up", got-2)
	}
}

// TestIASDeregistrationJoinsOnlyWithIAS: without an IAS client the
// pipeline is keb's own; with one, the deregistration removes the service
// provider before the runtime goes.
func TestIASDeregistrationJoinsOnlyWithIAS(t *testing.T) {
	t.Parallel()
	names := func(d deprovisioning.Deps) []string {
		var out []string
		for _, s := range deprovisioning.Pipeline(d).Steps {
			out = append(out, s.Name())
		}
		return out
	}
	own := names(deprovisioning.Deps{})
	got := names(deprovisioning.Deps{IAS: ias.NewClient(ias.Config{URL: "https://ias.example.com"}, nil, nil)})
	want := slices.Insert(slices.Clone(own), slices.Index(own, "delete_kyma"), "ias_deregistration")
	if !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
}

// TestIASDeregistrationInEngine runs the deprovisioning with the engine on
// real PostgreSQL against the IAS stand-in: it removes the service
// provider the provisioning registered and archives the instance; an IAS
// that stays down past the 5 minutes of retries is skipped, the instance
// archived all the same with the service provider as its leftover, which
// the leftovers job removes once IAS answers.
func TestIASDeregistrationInEngine(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, instanceID string, data process.Record) (*engineFixture, *iassim.Server, string, *ias.Client) {
		t.Helper()
		f := newEngineFixture(t)
		sim := iassim.New("keb", "s3cret", "idp")
		srv := httptest.NewServer(sim.Handler())
		t.Cleanup(srv.Close)
		client := ias.NewClient(ias.Config{URL: srv.URL, UserID: "keb", UserSecret: "s3cret"}, srv.Client(), nil)
		if err := client.CreateServiceProvider(f.ctx, ias.DisplayName(instanceID)); err != nil {
			t.Fatal(err)
		}
		log := logrus.New()
		log.SetOutput(io.Discard)
		f.engine = process.NewEngine(f.store, map[storage.OperationType]process.Pipeline{
			storage.OperationTypeDeprovision: deprovisioning.Pipeline(deprovisioning.Deps{Store: f.store, IAS: client}),
		}, log)
		opID := f.deprovisioning(instanceID, false, teardownSteps[1:]...)
		own, _ := json.Marshal(data)
		f.exec(`UPDATE operations SET data = $2 WHERE operation_id = $1`, opID, own)
		return f, sim, opID, client
	}

	t.Run("removes the service provider", func(t *testing.T) {
		t.Parallel()
		f, sim, opID, _ := setup(t, "inst-ias", process.Record{})
		f.process(opID)
		if left := sim.ServiceProviders(); len(left) != 0 {
			t.Errorf("service providers %v left in IAS", left)
		}
		a, err := f.store.Archived(f.ctx, "inst-ias")
		if err != nil || len(a.Leftovers) != 0 {
			t.Errorf("archive %+v, %v; want archived with no leftovers", a, err)
		}
	})

	t.Run("IAS down: skipped with a leftover", func(t *testing.T) {
		t.Parallel()
		// The step's 5 minutes of retries are over when IAS answers 503 again.
		started := time.Now().Add(-6 * time.Minute)
		f, sim, opID, client := setup(t, "inst-ias-down", process.Record{StepStartedAt: map[string]time.Time{"ias_deregistration": started}})
		sim.FailNext(1, http.StatusServiceUnavailable)
		f.process(opID)
		if left := sim.ServiceProviders(); len(left) != 1 {
			t.Fatalf("service providers %v, want the runtime's still there", left)
		}
		a, err := f.store.Archived(f.ctx, "inst-ias-down")
		if err != nil {
			t.Fatalf("Archived: %v", err)
		}
		var lo []process.Leftover
		if err := json.Unmarshal(a.Leftovers, &lo); err != nil || len(lo) != 1 || lo[0].Step != "ias_deregistration" ||
			lo[0].Category != process.CategoryIAS || lo[0].What != "the IAS service provider "+ias.DisplayName("inst-ias-down") {
			t.Fatalf("leftovers %s, want the IAS step's", a.Leftovers)
		}
		job := &deprovisioning.Leftovers{Store: f.store, IAS: client}
		res, err := job.Run(f.ctx)
		if err != nil || res.Resolved != 1 || res.Remaining != 0 {
			t.Errorf("leftovers job: %+v, %v; want the IAS leftover resolved", res, err)
		}
		if left := sim.ServiceProviders(); len(left) != 0 {
			t.Errorf("service providers %v left in IAS after the leftovers job", left)
		}
	})
}
