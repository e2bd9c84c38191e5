package deprovisioning_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

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
