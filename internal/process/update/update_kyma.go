package update

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// UpdateKyma brings the Kyma CR in line with the runtime after the update:
// the plan's labels, and the modules and channel the plan and parameters
// give. It writes only what differs, so a parameter change that leaves the
// Kyma CR as it is does not disturb Lifecycle Manager.
type UpdateKyma struct {
	KCP client.Client
}

// Name implements process.Step.
func (s *UpdateKyma) Name() string { return "update_kyma" }

// Run implements process.Step.
func (s *UpdateKyma) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if !op.Request.ChangesRuntime() {
		return process.Done()
	}
	after, params, err := planned(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	res, err := provisioning.ApplyKymaCR(ctx, s.KCP, provisioning.DesiredKyma(after, params))
	if err != nil {
		return process.StepResult{}, err
	}
	if res != controllerutil.OperationResultNone {
		op.Describe("The Kyma resource follows plan %s", after.Instance.PlanName)
	}
	return process.Done()
}
