package provisioning

import (
	"context"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// avsCreator creates AVS evaluations (*avs.Client is one).
type avsCreator interface {
	CreateEvaluation(ctx context.Context, req avs.CreateRequest) (avs.Evaluation, error)
}

// AVSInternalEvaluation creates the runtime's internal AVS evaluation (a
// monitor run by a tester inside the landscape) under the configured parent,
// before the cluster is requested, as upstream's AVS_Create_Internal_Eval_Step.
// It is in the pipeline only when APP_AVS_API_ENDPOINT is set.
//
// What it created is recorded in the operation (Record.AVS) and never
// created again; AVS has no lookup by name, so a crash between AVS's answer
// and that save leaves one evaluation nobody removes (docs/integrations/avs.md).
// An AVS that does not answer, or answers ≥ 500, is retried until the step's
// timeout (10 minutes, as upstream), then the provisioning fails; any other
// refusal fails it at once: a runtime is not provisioned unmonitored.
type AVSInternalEvaluation struct {
	AVS    avsCreator
	Config avs.Config
	// ShootDomain makes the runtime's domain (kyma.Settings.ShootDomain).
	ShootDomain string
}

// Name implements process.Step.
func (s *AVSInternalEvaluation) Name() string { return "avs_internal_evaluation" }

// Timeout implements process.TimedStep.
func (s *AVSInternalEvaluation) Timeout() time.Duration { return 10 * time.Minute }

// Remote implements process.RemoteStep.
func (s *AVSInternalEvaluation) Remote() string { return "AVS" }

// Run implements process.Step.
func (s *AVSInternalEvaluation) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	return createEvaluation(ctx, s.AVS, s.Config, s.ShootDomain, avs.Internal, op)
}

// createEvaluation creates the runtime's evaluation of kind unless the
// operation already recorded it.
func createEvaluation(ctx context.Context, c avsCreator, cfg avs.Config, shootDomain string, kind avs.Kind,
	op *process.Operation) (process.StepResult, error) {
	if op.Record.AVS.Of(kind).Live() {
		return process.Done()
	}
	which := map[avs.Kind]string{avs.Internal: "internal", avs.External: "external"}[kind]
	op.Describe("Creating the runtime's %s AVS evaluation", which)
	rt, err := avsRuntime(op, shootDomain)
	if err != nil {
		return process.StepResult{}, err
	}
	ev, err := c.CreateEvaluation(ctx, cfg.NewCreateRequest(kind, rt))
	if err != nil {
		if avs.Temporary(err) {
			return process.StepResult{}, fmt.Errorf("creating the %s AVS evaluation: %w", which, err)
		}
		return process.Fail("AVS refused the runtime's %s evaluation: %v", which, err)
	}
	if op.Record.AVS == nil {
		op.Record.AVS = &avs.Record{}
	}
	op.Record.AVS.Set(kind, &avs.Created{ID: ev.ID, Parent: cfg.ParentOf(kind, op.Instance.PlanName)})
	return process.Done()
}

// avsRuntime is what an evaluation says about the operation's runtime.
func avsRuntime(op *process.Operation, shootDomain string) (avs.Runtime, error) {
	params, err := Parameters(op)
	if err != nil {
		return avs.Runtime{}, err
	}
	region := op.Instance.ProviderRegion
	if params.Region != nil && *params.Region != "" {
		region = *params.Region
	}
	if region == "" {
		region = op.Record.ProviderRegion
	}
	i := op.Instance
	return avs.Runtime{InstanceID: i.InstanceID, InstanceName: params.Name, GlobalAccountID: i.GlobalAccountID,
		SubAccountID: i.SubAccountID, PlanName: i.PlanName, PlatformRegion: i.PlatformRegion, Region: region,
		ShootName: i.ShootName, Domain: kyma.Domain(i.ShootName, shootDomain)}, nil
}
