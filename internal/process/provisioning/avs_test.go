package provisioning_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/avssim"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// avsStandIn serves an AVS stand-in and returns the settings of keb's
// client of it.
func avsStandIn(t *testing.T) (*avssim.Server, *avs.Client, avs.Config) {
	t.Helper()
	sim := avssim.New(avssim.Options{ClientID: "cid", Username: "user", Password: "pw", Parents: []int64{40, 41}})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	cfg := avs.Config{APIEndpoint: srv.URL + avssim.APIPath, OAuthTokenEndpoint: srv.URL + avssim.TokenPath,
		OAuthClientID: "cid", OAuthUsername: "user", OAuthPassword: "pw",
		InternalTesterAccessID: 40, ExternalTesterAccessID: 42, GroupID: 40, ParentID: 40,
		TrialInternalTesterAccessID: 43, TrialGroupID: 44, TrialParentID: 41}
	return sim, avs.NewClient(cfg, srv.Client(), nil), cfg
}

func avsOp(t *testing.T, planID string) *process.Operation {
	t.Helper()
	inst := processtest.Instance(t, planID)
	inst.ShootName, inst.PlatformRegion, inst.ProviderRegion = "c-1a2b3c4", "cf-eu10", "eu-central-1"
	inst.Parameters = json.RawMessage(`{"name":"my-kyma"}`)
	return processtest.Operation(storage.OperationTypeProvision, inst)
}

// TestAVSStepsJoinOnlyWhenConfigured: with AVS off (keb serve's default)
// the pipeline is keb's own, step for step; configured, the internal
// evaluation comes before the cluster is requested and the external one
// last, and APP_AVS_DISABLED takes both out again.
func TestAVSStepsJoinOnlyWhenConfigured(t *testing.T) {
	t.Parallel()
	own := []string{"initialization", "resolve_hyperscaler_secret", "components", "overrides",
		"create_runtime", "check_runtime", "apply_kyma", "inject_btp_manager", "check_kyma"}
	if got := stepNames(provisioning.Deps{}); !slices.Equal(got, own) {
		t.Errorf("AVS off: %v, want %v", got, own)
	}
	on := provisioning.Deps{Config: provisioning.Config{AVS: avs.Config{APIEndpoint: "https://avs.example.com/api"}}}
	want := []string{"initialization", "resolve_hyperscaler_secret", "avs_internal_evaluation", "components", "overrides",
		"create_runtime", "check_runtime", "apply_kyma", "inject_btp_manager", "check_kyma", "avs_external_evaluation"}
	if got := stepNames(on); !slices.Equal(got, want) {
		t.Errorf("AVS on: %v, want %v", got, want)
	}
	on.Config.AVS.Disabled = true
	if got := stepNames(on); !slices.Equal(got, own) {
		t.Errorf("AVS disabled: %v, want %v", got, own)
	}
}

// TestAVSEvaluationSteps runs both steps against the stand-in: each creates
// its evaluation once (a re-run after the record was saved creates
// nothing), the bodies say what the contract says, a trial runtime gets no
// external evaluation and the trial parent, an AVS down is retried and a
// refusal fails the provisioning.
func TestAVSEvaluationSteps(t *testing.T) {
	t.Parallel()

	t.Run("created once, bodies as the contract", func(t *testing.T) {
		t.Parallel()
		sim, client, cfg := avsStandIn(t)
		op := avsOp(t, catalog.AWSPlanID)
		internal := &provisioning.AVSInternalEvaluation{AVS: client, Config: cfg, ShootDomain: "kyma.example.com"}
		external := &provisioning.AVSExternalEvaluation{AVS: client, Config: cfg, ShootDomain: "kyma.example.com"}
		for range 2 { // the second run is a re-run after a crash past the checkpoint
			for _, s := range []process.Step{internal, external} {
				res, err := s.Run(t.Context(), op)
				processtest.MustOutcome(t, s.Name(), processtest.Done, res, err)
			}
		}
		reqs := sim.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests to AVS, want 2 creations: %+v", len(reqs), reqs)
		}
		var in, ex avs.CreateRequest
		_ = json.Unmarshal([]byte(reqs[0].Body), &in)
		_ = json.Unmarshal([]byte(reqs[1].Body), &ex)
		id := op.InstanceID
		if in.Name != "K8S-AWS-Kyma-int-"+id+"-my-kyma" || in.URL != "" || in.CheckType != "" || in.ParentID != 40 ||
			in.TesterAccessID != 40 || in.Threshold != "30000" || len(in.Tags) != 7 || in.Tags[6].Content != "eu-central-1" {
			t.Errorf("internal evaluation body %s", reqs[0].Body)
		}
		if ex.Name != "K8S-AWS-Kyma-ext-"+id+"-my-kyma" || ex.URL != "https://healthz.c-1a2b3c4.kyma.example.com/healthz/ready" ||
			ex.CheckType != "HTTPSGET" || ex.TesterAccessID != 42 {
			t.Errorf("external evaluation body %s", reqs[1].Body)
		}
		rec := op.Record.AVS
		if !rec.Internal.Live() || !rec.External.Live() || rec.Internal.Parent != 40 || rec.Internal.ID == rec.External.ID {
			t.Errorf("record %+v %+v", rec.Internal, rec.External)
		}
		if n := len(sim.Evaluations()[40].Children); n != 2 {
			t.Errorf("parent 40 has %d children, want 2", n)
		}
	})

	t.Run("trial: trial tester, no external evaluation", func(t *testing.T) {
		t.Parallel()
		sim, client, cfg := avsStandIn(t)
		op := avsOp(t, catalog.TrialPlanID)
		for _, s := range []process.Step{&provisioning.AVSInternalEvaluation{AVS: client, Config: cfg},
			&provisioning.AVSExternalEvaluation{AVS: client, Config: cfg}} {
			res, err := s.Run(t.Context(), op)
			processtest.MustOutcome(t, s.Name(), processtest.Done, res, err)
		}
		reqs := sim.Requests()
		if len(reqs) != 1 || !strings.Contains(reqs[0].Body, `"parent_id":41`) || !strings.Contains(reqs[0].Body, `"tester_access_id":43`) {
			t.Errorf("requests %+v, want one internal evaluation under the trial parent", reqs)
		}
		if op.Record.AVS.External != nil || op.Record.AVS.Internal.Parent != 41 {
			t.Errorf("record %+v", op.Record.AVS)
		}
	})

	t.Run("AVS down: retried; refused: failed", func(t *testing.T) {
		t.Parallel()
		sim, client, cfg := avsStandIn(t)
		op := avsOp(t, catalog.AzurePlanID)
		step := &provisioning.AVSInternalEvaluation{AVS: client, Config: cfg}
		sim.FailNext(1, http.StatusServiceUnavailable)
		if _, err := step.Run(t.Context(), op); err == nil || op.Record.AVS.Of(avs.Internal) != nil {
			t.Errorf("503: error %v, record %+v; want an error to retry and nothing recorded", err, op.Record.AVS)
		}
		sim.FailNext(1, http.StatusBadRequest)
		res, err := step.Run(t.Context(), op)
		if err != nil || res.Failure == nil || !strings.Contains(res.Failure.Error(), "AVS refused the runtime's internal evaluation") {
			t.Errorf("400: %+v, %v; want the provisioning failed", res, err)
		}
		if step.Timeout().Minutes() != 10 || (&provisioning.AVSExternalEvaluation{}).Timeout().Minutes() != 20 {
			t.Errorf("retry windows %s and %s, want upstream's 10 and 20 minutes", step.Timeout(),
				(&provisioning.AVSExternalEvaluation{}).Timeout())
		}
		if _, ok := process.StepComponent(step.Name()); !ok {
			t.Errorf("%s has no component", step.Name())
		}
	})
}
