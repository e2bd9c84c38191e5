package deprovisioning_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/edpsim"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/storage"
)

// subaccount is a subaccount's live instances as the store lists them.
type subaccount []storage.CleanupInstance

func (s subaccount) InstancesOfSubaccounts(context.Context, []string) ([]storage.CleanupInstance, error) {
	return s, nil
}

// TestEDPDeregistration runs the step against the stand-in: it removes the
// four entries and the tenant, keeps them while another runtime of the
// subaccount lives (a suspended one or one being deprovisioned does not
// count), retries EDP down and gives up on a refusal (the engine then skips
// it: it never fails a deprovisioning).
func TestEDPDeregistration(t *testing.T) {
	t.Parallel()
	sim := edpsim.New("kyma-dev", "s3cret")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	client := edp.NewClient(edp.Config{AdminURL: srv.URL, AuthURL: srv.URL, Namespace: "kyma-dev", Secret: "s3cret",
		Environment: "dev"}, srv.Client(), nil)
	inst := processtest.Instance(t, catalog.AWSPlanID)
	inst.SubAccountID = "SA-EDP"
	op := processtest.Operation(storage.OperationTypeDeprovision, inst)
	register := func() {
		t.Helper()
		_ = client.CreateDataTenant(t.Context(), "sa-edp")
		for _, item := range edp.Metadata("sa-edp", "cf-eu10", "aws") {
			if err := client.CreateMetadata(t.Context(), "sa-edp", item); err != nil {
				t.Fatal(err)
			}
		}
	}
	register()
	self := storage.CleanupInstance{InstanceID: inst.InstanceID, Running: storage.OperationTypeDeprovision}

	other := &deprovisioning.EDPDeregistration{EDP: client, Instances: subaccount{self, {InstanceID: "other", State: "succeeded"}}}
	res, err := other.Run(t.Context(), op)
	processtest.MustOutcome(t, "another runtime lives", processtest.Done, res, err)
	if _, ok := sim.Tenants()["sa-edp/dev"]; !ok {
		t.Fatalf("the tenant went although another runtime of the subaccount lives")
	}

	step := &deprovisioning.EDPDeregistration{EDP: client, Instances: subaccount{self,
		{InstanceID: "suspended", State: string(storage.RuntimeSuspended)},
		{InstanceID: "going", State: "succeeded", Running: storage.OperationTypeDeprovision}}}
	sim.FailNext(1, http.StatusBadGateway)
	if _, err := step.Run(t.Context(), op); err == nil {
		t.Errorf("502: no error to retry")
	}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "last runtime", processtest.Done, res, err)
	if len(sim.Tenants()) != 0 {
		t.Errorf("tenants left: %v", sim.Tenants())
	}
	res, err = step.Run(t.Context(), op) // a re-run: everything is gone, 404s are fine
	processtest.MustOutcome(t, "re-run", processtest.Done, res, err)

	register()
	sim.FailNext(1, http.StatusForbidden)
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "403", processtest.Failure, res, err)
	var s process.Step = step
	if sk, ok := s.(process.SkippableStep); !ok || sk.SkipAfter().Minutes() != 30 || sk.Leftover(op) != "the EDP data tenant sa-edp" {
		t.Errorf("not skippable after upstream's 30 minutes with the tenant as leftover")
	}
}

// TestEDPDeregistrationSkippedThenRetried runs the deprovisioning with the
// engine on PostgreSQL: an EDP down past the 30 minutes of retries is
// skipped, the tenant listed as left behind; the leftovers job removes it
// once EDP answers.
func TestEDPDeregistrationSkippedThenRetried(t *testing.T) {
	t.Parallel()
	f := newEngineFixture(t)
	sim := edpsim.New("kyma-dev", "s3cret")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	client := edp.NewClient(edp.Config{AdminURL: srv.URL, AuthURL: srv.URL, Namespace: "kyma-dev", Secret: "s3cret",
		Environment: "dev"}, srv.Client(), nil)
	log := logrus.New()
	log.SetOutput(io.Discard)
	f.engine = process.NewEngine(f.store, map[storage.OperationType]process.Pipeline{
		storage.OperationTypeDeprovision: deprovisioning.Pipeline(deprovisioning.Deps{Store: f.store, EDP: client, Subaccounts: f.store}),
	}, log)
	opID := f.deprovisioning("inst-edp", false, teardownSteps...)
	// engineFixture's instance is in subaccount sa-<instance ID>.
	if err := client.CreateDataTenant(f.ctx, "sa-inst-edp"); err != nil {
		t.Fatal(err)
	}
	started, _ := json.Marshal(process.Record{StepStartedAt: map[string]time.Time{"edp_deregistration": time.Now().Add(-31 * time.Minute)}})
	f.exec(`UPDATE operations SET data = $2 WHERE operation_id = $1`, opID, started)
	sim.FailNext(1, http.StatusServiceUnavailable)
	f.process(opID)
	a, err := f.store.Archived(f.ctx, "inst-edp")
	if err != nil {
		t.Fatalf("Archived: %v", err)
	}
	var lo []process.Leftover
	if err := json.Unmarshal(a.Leftovers, &lo); err != nil || len(lo) != 1 || lo[0].Step != "edp_deregistration" || lo[0].Category != process.CategoryEDP {
		t.Fatalf("leftovers %s, want the EDP tenant", a.Leftovers)
	}
	if _, ok := sim.Tenants()["sa-inst-edp/dev"]; !ok {
		t.Fatalf("the tenant went although EDP was down")
	}
	res, err := (&deprovisioning.Leftovers{Store: f.store, EDP: client, Subaccounts: f.store}).Run(f.ctx)
	if err != nil || res.Resolved != 1 {
		t.Errorf("leftovers job: %+v, %v; want the tenant removed", res, err)
	}
	if len(sim.Tenants()) != 0 {
		t.Errorf("tenants left after the leftovers job: %v", sim.Tenants())
	}
}
