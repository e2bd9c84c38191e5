package update

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// UpdateKyma brings the Kyma CR's labels in line with the runtime after the
// update: a plan change rewrites the plan labels (and the internal and beta
// labels the settings give per plan). It patches only the labels the
// update changes (kyma.PatchLabels), so a parameter change writes nothing,
// and everything else on the CR, Lifecycle Manager's and operators', stays.
// spec.modules and spec.channel are not updatable parameters: an update
// never touches them.
type UpdateKyma struct {
	KCP    client.Client
	Config Config
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
	beforeParams, err := provisioning.Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	// The labels the runtime has as recorded (its plan and the region its
	// cluster runs in), and those it gets.
	before := provisioning.KymaInput(op, beforeParams)
	before.Region = op.Instance.ProviderRegion
	wrote, err := kyma.PatchLabels(ctx, s.KCP, controlplane.Namespace, kyma.Name(op.Instance.RuntimeID),
		kyma.Labels(before, s.Config.Kyma), kyma.Labels(provisioning.KymaInput(after, params), s.Config.Kyma))
	if apierrors.IsNotFound(err) {
		return process.Fail("the Kyma CR of runtime %s does not exist", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, err
	}
	if wrote {
		op.Describe("The Kyma resource follows plan %s", after.Instance.PlanName)
	}
	return process.Done()
}
