package deprovisioning

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// btpServiceKinds are the SAP BTP service operator's kinds, in the order
// they are removed: a binding before the instance it binds.
var btpServiceKinds = []schema.GroupVersionKind{
	{Group: "services.cloud.sap.com", Version: "v1", Kind: "ServiceBinding"},
	{Group: "services.cloud.sap.com", Version: "v1", Kind: "ServiceInstance"},
}

// runtimeClients gives a client of a runtime (the runtime client cache).
type runtimeClients interface {
	Client(ctx context.Context, runtimeID string) (client.Client, error)
}

// SoftDeleteBTPServices removes the BTP service bindings and instances from
// the runtime of a subaccount that was deleted (a deprovisioning the
// subaccount cleanup started): with the subaccount gone, the BTP service
// operator cannot remove them from Service Manager, so their finalizers
// would stay and keep the namespaces, and the cluster's deletion, waiting.
// Each object is deleted; one still there FinalizerGrace after the step
// began has its finalizers stripped ("soft delete"). A runtime without the
// operator's CRDs has nothing to remove.
type SoftDeleteBTPServices struct {
	Runtimes runtimeClients
	Config   Config
}

// Name implements process.Step.
func (s *SoftDeleteBTPServices) Name() string { return "soft_delete_btp_services" }

// Remote implements process.RemoteStep.
func (s *SoftDeleteBTPServices) Remote() string { return "the runtime's API server" }

// SkipAfter implements process.SkippableStep.
func (s *SoftDeleteBTPServices) SkipAfter() time.Duration { return s.Config.SkipAfter }

// Leftover implements process.SkippableStep.
func (s *SoftDeleteBTPServices) Leftover(*process.Operation) string {
	return "BTP service bindings and instances in the runtime (they go with the cluster; Service Manager keeps its records)"
}

// Run implements process.Step.
func (s *SoftDeleteBTPServices) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if !op.Record.SubaccountDeleted || op.Instance.RuntimeID == "" || s.Runtimes == nil {
		return process.Done()
	}
	c, err := s.Runtimes.Client(ctx, op.Instance.RuntimeID)
	if errors.Is(err, runtimeclient.ErrKubeconfigNotFound) {
		return process.Done() // no cluster (yet, or any more): nothing in it
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("runtime client: %w", err)
	}
	strip := op.Now().Sub(op.Record.StepStartedAt[s.Name()]) >= s.Config.FinalizerGrace
	for _, gvk := range btpServiceKinds {
		left, err := removeAll(ctx, c, gvk, strip)
		if err != nil {
			return process.StepResult{}, err
		}
		if left > 0 {
			op.Describe("Removing BTP service objects from the runtime: %d %ss left", left, gvk.Kind)
			return process.RetryAfter(s.Config.RemovalPoll)
		}
	}
	return process.Done()
}

// removeAll deletes every object of gvk in the runtime and, with strip,
// takes the finalizers off those still there; it returns how many are left.
// A kind the runtime does not serve has none.
func removeAll(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, strip bool) (int, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("listing %ss: %w", gvk.Kind, err)
	}
	left := 0
	for i := range list.Items {
		obj := &list.Items[i]
		if obj.GetDeletionTimestamp() == nil {
			if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return 0, fmt.Errorf("deleting %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
			}
		}
		if len(obj.GetFinalizers()) == 0 {
			continue // gone with the delete
		}
		if strip {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
			if err := c.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
				return 0, fmt.Errorf("removing the finalizers of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
			}
			continue
		}
		left++
	}
	return left, nil
}
