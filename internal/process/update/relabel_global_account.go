package update

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// RelabelGlobalAccount gives the Runtime and Kyma CRs of a runtime whose
// subaccount moved to another global account (the PATCH stored it) that
// account's kyma-project.io/global-account-id label, with a JSON merge
// patch of that label alone: the infrastructure manager and Lifecycle
// Manager read it, the rest of the CRs stays.
type RelabelGlobalAccount struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *RelabelGlobalAccount) Name() string { return "relabel_global_account" }

// Run implements process.Step.
func (s *RelabelGlobalAccount) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Request == nil || !op.Request.GlobalAccountMoved || op.Instance.RuntimeID == "" {
		return process.Done()
	}
	ga := op.Instance.GlobalAccountID
	op.Describe("Relabelling the runtime with global account %s", ga)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		controlplane.LabelGlobalAccountID: ga}}})
	if err != nil {
		return process.StepResult{}, err
	}
	rt := &infrastructuremanager.Runtime{}
	rt.Name, rt.Namespace = kyma.Name(op.Instance.RuntimeID), s.Config.Namespace
	k := &kyma.Kyma{}
	k.Name, k.Namespace = kyma.Name(op.Instance.RuntimeID), s.Config.Namespace
	for _, obj := range []client.Object{rt, k} {
		err := s.KCP.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("keb"))
		if apierrors.IsNotFound(err) {
			return process.Fail("the %T of runtime %s does not exist", obj, op.Instance.RuntimeID)
		}
		if err != nil {
			return process.StepResult{}, fmt.Errorf("relabelling %T: %w", obj, err)
		}
	}
	if !op.Request.ChangesRuntime() && !op.Request.Credentials {
		op.Conclude("Operation succeeded: the runtime is relabelled with global account %s", ga)
	}
	return process.Done()
}
