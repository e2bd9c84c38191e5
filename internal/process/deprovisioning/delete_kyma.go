package deprovisioning

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// DeleteKyma deletes the runtime's Kyma CR and waits until Lifecycle Manager
// has let it go.
type DeleteKyma struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *DeleteKyma) Name() string { return "delete_kyma" }

// SkipAfter implements process.SkippableStep: a Kyma CR Lifecycle Manager
// does not let go must not keep the cluster.
func (s *DeleteKyma) SkipAfter() time.Duration { return s.Config.SkipAfter }

// Leftover implements process.SkippableStep.
func (s *DeleteKyma) Leftover(op *process.Operation) string {
	return fmt.Sprintf("the Kyma CR %s/%s", s.Config.Namespace, kyma.Name(op.Instance.RuntimeID))
}

// Run implements process.Step.
func (s *DeleteKyma) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Instance.RuntimeID == "" {
		return process.Done() // provisioning never got as far as naming a runtime
	}
	op.Describe("Uninstalling Kyma: deleting the Kyma resource")
	k := &kyma.Kyma{}
	k.Name, k.Namespace = kyma.Name(op.Instance.RuntimeID), s.Config.Namespace
	gone, err := deleteAndCheck(ctx, s.KCP, k)
	if err != nil {
		return process.StepResult{}, fmt.Errorf("deleting Kyma CR: %w", err)
	}
	if !gone {
		op.Describe("Waiting for Kyma to be uninstalled from the runtime")
		return process.RetryAfter(s.Config.RemovalPoll)
	}
	return process.Done()
}

// deleteAndCheck deletes obj (tolerating that it is gone) and reports
// whether it no longer exists: finalizers may keep it for a while.
func deleteAndCheck(ctx context.Context, c client.Client, obj client.Object) (bool, error) {
	if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}
