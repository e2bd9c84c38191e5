package upgrade

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

// AwaitRuntime waits until the infrastructure manager has applied the
// changed Runtime CR: status.observedGeneration reached the generation the
// change produced and the state is Ready again. Waiting releases the worker;
// the control-plane watch wakes the operation when the Runtime turns Ready.
type AwaitRuntime struct {
	KCP client.Reader
	// Watch, when set, is what that watch has seen: the run its wake-up
	// starts finds the applied Runtime CR there (process.GetAwaited).
	Watch  process.SeenReader
	Config Config
}

// Name implements process.Step.
func (s *AwaitRuntime) Name() string { return "await_upgrade" }

// Timeout implements process.TimedStep.
func (s *AwaitRuntime) Timeout() time.Duration { return s.Config.RuntimeTimeout }

// Run implements process.Step.
func (s *AwaitRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	u := op.Record.Upgrade
	if u.DryRun {
		op.Describe("Dry run: walked every step, changed nothing")
		return process.Done()
	}
	rt := &infrastructuremanager.Runtime{}
	err := process.GetAwaited(ctx, s.Watch, s.KCP, client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, rt,
		func() bool {
			return rt.Status.ObservedGeneration >= u.Generation && rt.Status.State == infrastructuremanager.StateReady
		})
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared during the upgrade", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	applied := rt.Status.ObservedGeneration >= u.Generation
	switch {
	case applied && rt.Status.State == infrastructuremanager.StateReady:
		op.Describe("The infrastructure manager applied the upgrade of cluster %s", op.Instance.ShootName)
		return process.Done()
	case applied && rt.Status.State == infrastructuremanager.StateFailed:
		return process.Fail("the infrastructure manager could not apply the upgrade: %s", rt.Status.Message)
	}
	if !applied && rt.Status.State != infrastructuremanager.StatePending {
		// The infrastructure manager has not noticed the change yet: it
		// will within moments, and a roll-out it has not begun sends no
		// event that reliably wakes this wait, so look again soon.
		op.Describe("Waiting for the infrastructure manager to pick up the upgrade of cluster %s", op.Instance.ShootName)
		return process.RetryAfter(min(s.Config.RuntimePoll, noticePoll))
	}
	op.Describe("Waiting for the infrastructure manager to apply the upgrade of cluster %s (%s)", op.Instance.ShootName, rt.Status.State)
	return process.RetryAfter(s.Config.RuntimePoll)
}

// noticePoll is how soon a wait looks again while the infrastructure manager
// has not picked the change up.
const noticePoll = 2 * time.Second
