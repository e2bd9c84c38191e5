package deprovisioning_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
)

// holdFinalizer stands for Lifecycle Manager's or the infrastructure manager's finalizer.
const holdFinalizer = "test.kyma-project.io/hold"

// releaseFinalizers lets obj go, as its controller would once it is done.
func releaseFinalizers(t *testing.T, obj client.Object) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := kcpClient(t).Patch(t.Context(), obj, patch); err != nil {
		t.Fatalf("removing finalizers of %s: %v", obj.GetName(), err)
	}
}

// exists reports whether obj is still stored, and whether it is being deleted.
func exists(t *testing.T, obj client.Object) (bool, bool) {
	t.Helper()
	err := kcpClient(t).Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false, false
	}
	if err != nil {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	return true, obj.GetDeletionTimestamp() != nil
}

func TestDeleteKyma(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		noRuntime bool   // provisioning never named a runtime
		runtimeID string // "" : the instance's
		noCR      bool
		finalizer bool
		temporary bool // a suspension removes the runtime all the same
	}{
		{name: "no runtime ID: done, nothing touched", noRuntime: true},
		{name: "Kyma CR without finalizer: deleted, done"},
		{name: "Kyma CR already gone: done", noCR: true},
		{name: "finalizer holds the CR: waits, then done once released", finalizer: true},
		{name: "upper-case runtime ID: the lower-case CR is deleted", runtimeID: "ABCDEF12-3456-4789-8abc-def012345678"},
		{name: "suspension: the Kyma CR is deleted all the same", temporary: true, finalizer: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			op := newOp(t)
			op.Temporary = tc.temporary
			if tc.runtimeID != "" {
				op.Instance.RuntimeID = tc.runtimeID
			}
			runtimeID := op.Instance.RuntimeID
			if !tc.noRuntime {
				op.Record.RuntimeID = runtimeID
			}
			k := &kyma.Kyma{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ToLower(runtimeID)},
				Spec: kyma.KymaSpec{Channel: "regular"}}
			if tc.finalizer {
				k.Finalizers = []string{holdFinalizer}
			}
			if !tc.noCR {
				if err := c.Create(t.Context(), k); err != nil {
					t.Fatalf("creating Kyma CR: %v", err)
				}
			}
			cfg := testConfig(ns)
			step := &deprovisioning.DeleteKyma{KCP: c, Config: cfg}
			res, err := step.Run(t.Context(), op)

			if tc.noRuntime {
				processtest.MustOutcome(t, "delete_kyma", processtest.Done, res, err)
				if ok, deleting := exists(t, k); !ok || deleting {
					t.Errorf("a Kyma CR was touched although the operation names no runtime")
				}
				return
			}
			if tc.finalizer {
				processtest.MustOutcome(t, "delete_kyma while held", processtest.Retry, res, err)
				if res.RetryAfter != cfg.RemovalPoll {
					t.Errorf("retry after %s, want %s", res.RetryAfter, cfg.RemovalPoll)
				}
				if !strings.Contains(op.Description, "Waiting") || !strings.Contains(op.Description, "Kyma") {
					t.Errorf("description %q does not say it waits for Kyma", op.Description)
				}
				if ok, deleting := exists(t, k); !ok || !deleting {
					t.Fatalf("held CR: exists %v, being deleted %v; want both", ok, deleting)
				}
				// Still held: a second poll waits again.
				res, err = step.Run(t.Context(), op)
				processtest.MustOutcome(t, "delete_kyma still held", processtest.Retry, res, err)
				releaseFinalizers(t, k)
				res, err = step.Run(t.Context(), op)
			}
			processtest.MustOutcome(t, "delete_kyma", processtest.Done, res, err)
			if ok, _ := exists(t, k); ok {
				t.Error("Kyma CR still exists after the step finished")
			}
			// Deleting again, as after a crash, is done at once.
			res, err = step.Run(t.Context(), op)
			processtest.MustOutcome(t, "delete_kyma re-run", processtest.Done, res, err)
		})
	}
}
