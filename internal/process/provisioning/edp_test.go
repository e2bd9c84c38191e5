package provisioning_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/edpsim"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

func edpStandIn(t *testing.T) (*edpsim.Server, *edp.Client) {
	t.Helper()
	sim := edpsim.New("kyma-dev", "s3cret")
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	return sim, edp.NewClient(edp.Config{AdminURL: srv.URL, AuthURL: srv.URL, Namespace: "kyma-dev", Secret: "s3cret",
		Environment: "dev"}, srv.Client(), nil)
}

func edpOp(t *testing.T) *process.Operation {
	t.Helper()
	inst := processtest.Instance(t, catalog.AzureLitePlanID)
	inst.SubAccountID = "SA-" + strings.ToUpper(inst.InstanceID[:8])
	inst.PlatformRegion = "cf-eu10"
	return processtest.Operation(storage.OperationTypeProvision, inst)
}

// TestEDPRegistration runs the step against the stand-in: the tenant and
// its four entries, once; a run that crashed before its record finds the
// tenant (409), removes it and registers it again; EDP down is retried, a
// refusal fails the step (which skips it unless EDP is required).
func TestEDPRegistration(t *testing.T) {
	t.Parallel()

	t.Run("registered once, again after a crash", func(t *testing.T) {
		t.Parallel()
		sim, client := edpStandIn(t)
		op := edpOp(t)
		step := &provisioning.EDPRegistration{EDP: client, Environment: "dev"}
		name := strings.ToLower(op.Instance.SubAccountID)
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, "first run", processtest.Done, res, err)
		want := map[string]string{"maasConsumerEnvironment": "CF", "maasConsumerRegion": "cf-eu10",
			"maasConsumerSubAccount": name, "maasConsumerServicePlan": "tdd"}
		if md := sim.Tenants()[name+"/dev"]; len(md) != 4 || md["maasConsumerServicePlan"] != "tdd" || md["maasConsumerSubAccount"] != name {
			t.Fatalf("tenant %v, want %v", md, want)
		}
		if r := op.Record.EDP; r == nil || !r.Created || r.Tenant != name {
			t.Errorf("record %+v", r)
		}
		n := len(sim.Requests())
		res, err = step.Run(t.Context(), op)
		processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
		if len(sim.Requests()) != n {
			t.Errorf("a re-run with the record called EDP")
		}
		// A crash before the record was saved: the next run meets its own tenant.
		op.Record.EDP = nil
		res, err = step.Run(t.Context(), op)
		processtest.MustOutcome(t, "after a crash", processtest.Retry, res, err)
		if _, ok := sim.Tenants()[name+"/dev"]; ok {
			t.Fatalf("the conflicting tenant was not removed")
		}
		res, err = step.Run(t.Context(), op)
		processtest.MustOutcome(t, "registered again", processtest.Done, res, err)
		if md := sim.Tenants()[name+"/dev"]; len(md) != 4 || len(sim.Tenants()) != 1 {
			t.Errorf("tenants %v, want one with 4 entries", sim.Tenants())
		}
	})

	t.Run("EDP down, EDP refusing", func(t *testing.T) {
		t.Parallel()
		sim, client := edpStandIn(t)
		op := edpOp(t)
		step := &provisioning.EDPRegistration{EDP: client, Environment: "dev"}
		sim.FailNext(1, http.StatusServiceUnavailable)
		if _, err := step.Run(t.Context(), op); err == nil {
			t.Errorf("503: no error to retry")
		}
		sim.FailNext(1, http.StatusBadRequest)
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, "400", processtest.Failure, res, err)
		var optional process.Step = &provisioning.OptionalEDPRegistration{EDPRegistration: *step}
		if _, ok := optional.(process.SkippableStep); !ok {
			t.Errorf("the optional registration is not skippable")
		}
		if _, ok := process.Step(step).(process.SkippableStep); ok {
			t.Errorf("the required registration is skippable")
		}
	})
}

// TestEDPStepJoinsOnlyWhenEnabled: EDP's registration follows the AVS
// internal evaluation, before the cluster; required or not decides its
// kind; disabled it is out.
func TestEDPStepJoinsOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	d := provisioning.Deps{Config: provisioning.Config{EDP: edp.Config{AdminURL: "https://edp.example.com"}}}
	steps := provisioning.Pipeline(d).Steps
	var names []string
	for _, s := range steps {
		names = append(names, s.Name())
	}
	if i := slices.Index(names, "edp_registration"); i != 2 || names[3] != "components" {
		t.Fatalf("steps %v, want edp_registration third, before components", names)
	}
	if _, ok := steps[2].(process.SkippableStep); !ok {
		t.Errorf("EDP not required: the step is not skippable")
	}
	d.Config.EDP.Required = true
	if _, ok := provisioning.Pipeline(d).Steps[2].(process.SkippableStep); ok {
		t.Errorf("EDP required: the step is skippable")
	}
	d.Config.EDP.Disabled = true
	if len(provisioning.Pipeline(d).Steps) != len(steps)-1 {
		t.Errorf("EDP disabled: the step is still there")
	}
}
