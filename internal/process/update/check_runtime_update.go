package update

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// CheckRuntimeUpdate waits until the infrastructure manager has applied the
// change update_runtime wrote (im.Write.Applied: Ready after it, see
// docs/architecture.md). Failed is waited through until the step's timeout,
// which fails the update with the newest condition's reason and message; the
// instance keeps its recorded parameters.
type CheckRuntimeUpdate struct {
	KCP client.Reader
	// Watch, when set, is what that watch has seen: the run its wake-up
	// starts finds the applied Runtime CR there (process.GetAwaited).
	Watch  process.SeenReader
	Config Config
}

// Name implements process.Step.
func (s *CheckRuntimeUpdate) Name() string { return "check_runtime_update" }

// Timeout implements process.TimedStep.
func (s *CheckRuntimeUpdate) Timeout() time.Duration { return s.Config.RuntimeTimeout }

// Run implements process.Step.
func (s *CheckRuntimeUpdate) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	write := op.Record.RuntimeWrite
	if !op.Request.ChangesRuntime() || write == nil {
		// Nothing was written that the infrastructure manager must apply
		// (the CR already carried the change, or only labels changed).
		return process.Done()
	}
	wait := provisioning.RuntimeWait{KCP: s.KCP, Watch: s.Watch, Namespace: s.Config.Namespace,
		Poll: s.Config.RuntimePoll, Grace: s.Config.RuntimeGrace}
	rt, applied, next, err := wait.Await(ctx, op, write)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared before the update was applied", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	if applied {
		op.Describe("The infrastructure manager applied the change to cluster %s", op.Instance.ShootName)
		return process.Done()
	}
	state := im.Explain(rt.Status)
	if rt.Status.State == im.StateReady {
		state += ", change not taken up yet"
	}
	op.Describe("Waiting for the infrastructure manager to apply the change to cluster %s (infrastructure state: %s)", op.Instance.ShootName, state)
	return process.RetryAfter(next)
}
