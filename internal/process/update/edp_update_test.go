package update_test

import (
	"net/http/httptest"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/edpsim"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestEDPUpdate: a plan change PUTs the new maasConsumerServicePlan; an
// update that keeps the plan calls nothing; the step is in the pipeline
// only with EDP, skippable unless EDP is required.
func TestEDPUpdate(t *testing.T) {
	t.Parallel()
	sim := edpsim.New("kyma-dev", "s3cret")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	client := edp.NewClient(edp.Config{AdminURL: srv.URL, AuthURL: srv.URL, Namespace: "kyma-dev", Secret: "s3cret",
		Environment: "dev"}, srv.Client(), nil)
	_ = client.CreateDataTenant(t.Context(), "sa-upd")
	for _, item := range edp.Metadata("sa-upd", "cf-eu10", "trial") {
		_ = client.CreateMetadata(t.Context(), "sa-upd", item)
	}
	inst := processtest.Instance(t, catalog.TrialPlanID)
	inst.SubAccountID = "sa-upd"
	op := processtest.Operation(storage.OperationTypeUpdate, inst)
	op.Request = &storage.UpdateRequest{PlanID: catalog.TrialPlanID, PlanName: "trial"}
	step := &update.EDPUpdate{EDP: client}
	n := len(sim.Requests())
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "same plan", processtest.Done, res, err)
	if len(sim.Requests()) != n {
		t.Errorf("an update keeping the plan called EDP")
	}
	op.Request = &storage.UpdateRequest{PlanID: catalog.BuildRuntimeAWSPlanID, PlanName: "build-runtime-aws"}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "plan change", processtest.Done, res, err)
	reqs := sim.Requests()
	if last := reqs[len(reqs)-1]; last.Method != "PUT" || last.Path != "/namespaces/kyma-dev/dataTenants/sa-upd/dev/metadata/maasConsumerServicePlan" ||
		last.Body != `{"value":"build-runtime"}` {
		t.Errorf("request %+v", last)
	}
	names := func(d update.Deps) (out []string) {
		for _, s := range update.Pipeline(d).Steps {
			out = append(out, s.Name())
		}
		return out
	}
	without := names(update.Deps{})
	with := update.Pipeline(update.Deps{EDP: client}).Steps
	if len(with) != len(without)+1 || with[len(with)-1].Name() != "edp_update" {
		t.Errorf("with EDP: %d steps, last %s", len(with), with[len(with)-1].Name())
	}
	if _, ok := with[len(with)-1].(process.SkippableStep); !ok {
		t.Errorf("EDP not required: edp_update is not skippable")
	}
	if _, ok := update.Pipeline(update.Deps{EDP: client, EDPRequired: true}).Steps[len(with)-1].(process.SkippableStep); ok {
		t.Errorf("EDP required: edp_update is skippable")
	}
}
