package upgrade_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/avssim"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/upgrade"
	"github.com/kyma-keb/keb/internal/storage"
)

// provisioned is the provisioning a reader returns: one whose record holds rec.
type provisioned struct{ rec avs.Record }

func (p provisioned) LastOperationOfType(_ context.Context, _ string, _ storage.OperationType) (storage.Operation, error) {
	data, _ := json.Marshal(map[string]any{"avs": p.rec})
	return storage.Operation{Data: data}, nil
}

// maintenanceFixture is an AVS stand-in holding a runtime's two
// evaluations, the external one already in maintenance by an operator's
// hand, and the steps of a cluster upgrade using it.
type maintenanceFixture struct {
	sim         *avssim.Server
	client      *avs.Client
	start       *upgrade.AVSMaintenanceStart
	end         *upgrade.AVSMaintenanceEnd
	in, ex, in2 int64
}

func newMaintenanceFixture(t *testing.T) *maintenanceFixture {
	t.Helper()
	sim := avssim.New(avssim.Options{ClientID: "cid", Username: "user", Password: "pw", Parents: []int64{40}})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := avs.Config{APIEndpoint: srv.URL + avssim.APIPath, OAuthTokenEndpoint: srv.URL + avssim.TokenPath,
		OAuthClientID: "cid", OAuthUsername: "user", OAuthPassword: "pw",
		InternalTesterAccessID: 40, ExternalTesterAccessID: 40, GroupID: 40, ParentID: 40}
	c := avs.NewClient(cfg, srv.Client(), nil)
	f := &maintenanceFixture{sim: sim, client: c}
	rt := avs.Runtime{InstanceID: "i", InstanceName: "n", PlanName: "aws", Domain: "c.example.com"}
	var rec avs.Record
	for i, kind := range []avs.Kind{avs.Internal, avs.External, avs.Internal} {
		ev, err := c.CreateEvaluation(t.Context(), cfg.NewCreateRequest(kind, rt))
		if err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			f.in = ev.ID
			rec.Internal = &avs.Created{ID: ev.ID, Parent: 40}
		case 1:
			f.ex = ev.ID
			rec.External = &avs.Created{ID: ev.ID, Parent: 40}
		case 2:
			f.in2 = ev.ID // another runtime's: never touched
		}
	}
	if err := c.SetStatus(t.Context(), f.in, avs.StatusInactive); err != nil {
		t.Fatal(err)
	}
	if err := c.SetStatus(t.Context(), f.ex, avs.StatusMaintenance); err != nil {
		t.Fatal(err)
	}
	f.start = &upgrade.AVSMaintenanceStart{AVS: c, Provisioning: provisioned{rec}}
	f.end = &upgrade.AVSMaintenanceEnd{AVS: c}
	return f
}

func (f *maintenanceFixture) status(id int64) avs.Status { return f.sim.Evaluations()[id].Status }

func upgradeOp(t *testing.T) *process.Operation {
	op := processtest.Operation(storage.OperationTypeUpgradeCluster, processtest.Instance(t, catalog.AWSPlanID))
	op.Record.Upgrade = &process.Upgrade{OrchestrationID: "o-1"}
	return op
}

// TestAVSMaintenanceDuringClusterUpgrade: the start saves each
// evaluation's status before it sets MAINTENANCE (a re-run after a crash
// still restores INACTIVE), leaves one already in maintenance alone, and
// the end restores what was there; a failed upgrade's hook restores too.
func TestAVSMaintenanceDuringClusterUpgrade(t *testing.T) {
	t.Parallel()

	t.Run("start, crash, start again, end", func(t *testing.T) {
		t.Parallel()
		f := newMaintenanceFixture(t)
		op := upgradeOp(t)
		res, err := f.start.Run(t.Context(), op)
		processtest.MustOutcome(t, "first pass", processtest.Retry, res, err)
		if f.status(f.in) != avs.StatusInactive {
			t.Fatalf("the first pass changed the status before saving it")
		}
		res, err = f.start.Run(t.Context(), op)
		processtest.MustOutcome(t, "second pass", processtest.Done, res, err)
		// A crash before the checkpoint: the step runs again from the saved record.
		op.Record.AVSMaintenance.Evaluations[0].Set = false
		res, err = f.start.Run(t.Context(), op)
		processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
		if f.status(f.in) != avs.StatusMaintenance || f.status(f.in2) != avs.StatusActive {
			t.Errorf("statuses %s / %s, want MAINTENANCE for the runtime's, ACTIVE for another's", f.status(f.in), f.status(f.in2))
		}
		if m := op.Record.AVSMaintenance.Evaluations; len(m) != 1 || m[0].ID != f.in || m[0].Original != avs.StatusInactive {
			t.Errorf("recorded %+v, want only the internal evaluation with INACTIVE to restore", m)
		}
		res, err = f.end.Run(t.Context(), op)
		processtest.MustOutcome(t, "end", processtest.Done, res, err)
		if f.status(f.in) != avs.StatusInactive || f.status(f.ex) != avs.StatusMaintenance {
			t.Errorf("after the upgrade: %s / %s, want INACTIVE restored and the operator's MAINTENANCE kept", f.status(f.in), f.status(f.ex))
		}
		var puts []string
		for _, r := range f.sim.Requests() {
			if r.Method == http.MethodPut {
				puts = append(puts, r.Body)
			}
		}
		// Setup's two, the start's two (the re-run's included), the end's one.
		if want := []string{`"INACTIVE"`, `"MAINTENANCE"`, `"MAINTENANCE"`, `"MAINTENANCE"`, `"INACTIVE"`}; !slices.Equal(puts, want) {
			t.Errorf("lifecycle bodies %q, want %q", puts, want)
		}
	})

	t.Run("a failed upgrade restores; AVS down is retried; dry runs and exempt accounts are left alone", func(t *testing.T) {
		t.Parallel()
		f := newMaintenanceFixture(t)
		op := upgradeOp(t)
		for range 2 {
			_, _ = f.start.Run(t.Context(), op)
		}
		if err := f.end.RestoreAfterFailure(t.Context(), op); err != nil || f.status(f.in) != avs.StatusInactive {
			t.Errorf("after a failure: %v, status %s; want INACTIVE restored", err, f.status(f.in))
		}

		down := upgradeOp(t)
		f.sim.FailNext(1, http.StatusBadGateway)
		if _, err := f.start.Run(t.Context(), down); err == nil || down.Record.AVSMaintenance != nil {
			t.Errorf("502: %v, record %+v; want an error to retry and nothing recorded", err, down.Record.AVSMaintenance)
		}

		dry := upgradeOp(t)
		dry.Record.Upgrade.DryRun = true
		exempt := upgradeOp(t)
		s := *f.start
		s.Exemptions = avs.MaintenanceExemptions{GlobalAccounts: []string{exempt.Instance.GlobalAccountID}}
		before := len(f.sim.Requests())
		for _, o := range []*process.Operation{dry, exempt} {
			res, err := s.Run(t.Context(), o)
			processtest.MustOutcome(t, "left alone", processtest.Done, res, err)
		}
		if n := len(f.sim.Requests()) - before; n != 0 {
			t.Errorf("%d AVS calls for a dry run and an exempt account, want none", n)
		}
	})
}

// TestClusterPipelineWithAVS: the maintenance steps wrap the cluster's
// change only with AVS, and the pipeline then restores on failure.
func TestClusterPipelineWithAVS(t *testing.T) {
	t.Parallel()
	names := func(p process.Pipeline) (out []string) {
		for _, s := range p.Steps {
			out = append(out, s.Name())
		}
		return out
	}
	if got := names(upgrade.ClusterPipeline(upgrade.Deps{})); !slices.Equal(got, []string{"upgrade_initialisation", "upgrade_cluster", "await_upgrade"}) {
		t.Errorf("without AVS: %v", got)
	}
	p := upgrade.ClusterPipeline(upgrade.Deps{AVS: &avs.Client{}})
	want := []string{"upgrade_initialisation", "avs_maintenance_start", "upgrade_cluster", "await_upgrade", "avs_maintenance_end"}
	if got := names(p); !slices.Equal(got, want) || p.Failed == nil {
		t.Errorf("with AVS: %v (Failed hook set: %v), want %v", got, p.Failed != nil, want)
	}
	if p := upgrade.ClusterPipeline(upgrade.Deps{}); p.Failed != nil {
		t.Errorf("without AVS the pipeline has a Failed hook")
	}
}
