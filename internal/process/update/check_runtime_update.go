package update

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// CheckRuntimeUpdate waits until the infrastructure manager reports the
// change applied: the Runtime CR Ready at (or past) the generation
// update_runtime wrote. Failed ends the update with the infrastructure
// manager's message; the instance keeps its recorded parameters.
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
	if !op.Request.ChangesRuntime() {
		return process.Done()
	}
	d := op.Record
	rt := &infrastructuremanager.Runtime{}
	err := process.GetAwaited(ctx, s.Watch, s.KCP, client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, rt,
		func() bool {
			return rt.Status.State == infrastructuremanager.StateReady && rt.Status.ObservedGeneration >= d.RuntimeGeneration
		})
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared before the update was applied", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	switch {
	case rt.Status.State == infrastructuremanager.StateFailed:
		return process.Fail("the infrastructure manager could not apply the change to cluster %s: %s", op.Instance.ShootName, rt.Status.Message)
	case rt.Status.State == infrastructuremanager.StateReady && rt.Status.ObservedGeneration >= d.RuntimeGeneration:
		op.Describe("The infrastructure manager applied the change to cluster %s", op.Instance.ShootName)
		return process.Done()
	}
	state := rt.Status.State
	if state == infrastructuremanager.StateReady {
		state = "Ready, change not seen yet"
	}
	op.Describe("Waiting for the infrastructure manager to apply the change to cluster %s (infrastructure state: %s)", op.Instance.ShootName, state)
	return process.RetryAfter(s.Config.RuntimePoll)
}
