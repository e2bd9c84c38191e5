package upgrade

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

// AwaitRuntime waits until the infrastructure manager has applied the change
// upgrade_cluster wrote into the Runtime CR (im.Write.Applied; see
// docs/architecture.md). An upgrade that wrote nothing there (a Kyma upgrade,
// a dry run, a cluster already at its target) waits for nothing. Failed is
// waited through until the step's timeout. Waiting releases the worker; the
// control-plane watch wakes the operation when the Runtime turns Ready.
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
	write := op.Record.RuntimeWrite
	if write == nil {
		return process.Done()
	}
	wait := provisioning.RuntimeWait{KCP: s.KCP, Watch: s.Watch, Namespace: s.Config.Namespace,
		Poll: s.Config.RuntimePoll, Grace: s.Config.RuntimeGrace}
	rt, applied, next, err := wait.Await(ctx, op, write)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared during the upgrade", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	if applied {
		op.Describe("The infrastructure manager applied the upgrade of cluster %s", op.Instance.ShootName)
		return process.Done()
	}
	state := im.Explain(rt.Status)
	if rt.Status.State == im.StateReady {
		state += ", upgrade not taken up yet"
	}
	op.Describe("Waiting for the infrastructure manager to apply the upgrade of cluster %s (infrastructure state: %s)", op.Instance.ShootName, state)
	return process.RetryAfter(next)
}
