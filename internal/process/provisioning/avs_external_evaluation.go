package provisioning

import (
	"context"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/process"
)

// AVSExternalEvaluation creates the runtime's external AVS evaluation (an
// HTTPS GET of https://healthz.<domain>/healthz/ready from outside) once the
// runtime is up, as upstream's AVS_Create_External_Eval_Step. Trial and free
// runtimes get none, nor does any with APP_AVS_EXTERNAL_TESTER_DISABLED.
// Idempotency and failures as AVSInternalEvaluation, with 20 minutes of
// retries.
type AVSExternalEvaluation struct {
	AVS         avsCreator
	Config      avs.Config
	ShootDomain string
}

// Name implements process.Step.
func (s *AVSExternalEvaluation) Name() string { return "avs_external_evaluation" }

// Timeout implements process.TimedStep.
func (s *AVSExternalEvaluation) Timeout() time.Duration { return 20 * time.Minute }

// Remote implements process.RemoteStep.
func (s *AVSExternalEvaluation) Remote() string { return "AVS" }

// Run implements process.Step.
func (s *AVSExternalEvaluation) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if s.Config.ExternalTesterDisabled || avs.TrialPlan(op.Instance.PlanName) {
		return process.Done()
	}
	return createEvaluation(ctx, s.AVS, s.Config, s.ShootDomain, avs.External, op)
}
