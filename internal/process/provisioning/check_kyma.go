package provisioning

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// CheckKyma waits, when the installation asks for it
// (APP_PROVISIONING_AWAIT_KYMA_READY), until Lifecycle Manager reports the
// Kyma CR Ready: every module installed. Error is waited through, as
// Lifecycle Manager retries; last_operation shows the modules' errors
// meanwhile, and a provisioning still short of Ready at the step's timeout
// fails with them. Without the setting the runtime is provisioned once its
// cluster is Ready and BTP Manager's Secret is in place, as upstream; the
// Kyma CR's state is shown to users either way (GET instance, /info/runtimes).
type CheckKyma struct {
	KCP client.Reader
	// Watch is what the control-plane watch has seen: a wake-up's run
	// finds the Ready Kyma CR there without a request.
	Watch  process.SeenReader
	Config Config
}

// Name implements process.Step.
func (s *CheckKyma) Name() string { return "check_kyma" }

// SharesCheckpoint implements process.SharedCheckpoint: it only reads.
func (s *CheckKyma) SharesCheckpoint(*process.Operation) bool { return true }

// Timeout implements process.TimedStep.
func (s *CheckKyma) Timeout() time.Duration { return s.Config.KymaTimeout }

// Run implements process.Step.
func (s *CheckKyma) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if !s.Config.AwaitKymaReady {
		return process.Done()
	}
	k := &kyma.Kyma{}
	key := client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}
	err := process.GetAwaited(ctx, s.Watch, s.KCP, key, k, func() bool { return k.Status.State == kyma.StateReady })
	if apierrors.IsNotFound(err) {
		return process.Fail("the Kyma CR of runtime %s disappeared before Kyma was ready", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Kyma CR: %w", err)
	}
	h := kyma.HealthOf(k)
	if h.State == kyma.StateReady {
		return process.Done()
	}
	state := string(h.State)
	if state == "" {
		state = "not reported yet"
	}
	if p := h.Problems(); p != "" {
		op.Describe("Waiting for Lifecycle Manager to install the Kyma modules (Kyma state: %s; %s)", state, p)
	} else {
		op.Describe("Waiting for Lifecycle Manager to install the Kyma modules (Kyma state: %s)", state)
	}
	return process.RetryAfter(s.Config.RuntimePoll)
}
