package deprovisioning_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
)

func TestDeleteRuntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		noRuntime bool
		noCR      bool
		finalizer bool
		temporary bool // a suspension removes the runtime all the same
		// overrides: the operation records an overrides Secret; overridesExist: it is stored.
		overrides, overridesExist bool
	}{
		{name: "no runtime ID: done, nothing touched", noRuntime: true, overrides: true, overridesExist: true},
		{name: "Runtime CR and overrides Secret deleted", overrides: true, overridesExist: true},
		{name: "Runtime CR deleted, no overrides recorded"},
		{name: "overrides Secret recorded but already gone", overrides: true},
		{name: "overrides Secret stored but never recorded (provisioning halted): deleted by its name",
			overridesExist: true},
		{name: "Runtime CR already gone: overrides still cleaned up", noCR: true, overrides: true, overridesExist: true},
		{name: "finalizer holds the CR: waits, keeps overrides, then done once released",
			finalizer: true, overrides: true, overridesExist: true},
		{name: "suspension: Runtime CR and overrides Secret deleted all the same",
			temporary: true, finalizer: true, overrides: true, overridesExist: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			op := newOp(t)
			op.Temporary = tc.temporary
			runtimeID := op.Instance.RuntimeID
			if tc.noRuntime {
				op.Instance.RuntimeID = ""
			}
			op.Instance.ShootName = "c-" + strings.ReplaceAll(runtimeID, "-", "")[:7]
			rt := runtimetest.Runtime(ns, runtimeID)
			if tc.finalizer {
				rt.Finalizers = []string{holdFinalizer}
			}
			if !tc.noCR {
				if err := c.Create(t.Context(), rt); err != nil {
					t.Fatalf("creating Runtime CR: %v", err)
				}
			}
			ov := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "overrides-" + runtimeID},
				Data: map[string][]byte{"global.domain": []byte("example.com")}}
			if tc.overrides {
				op.Record.OverridesSecret = ov.Name
			}
			if tc.overridesExist {
				if err := c.Create(t.Context(), ov); err != nil {
					t.Fatalf("creating overrides Secret: %v", err)
				}
			}
			cfg := testConfig(ns)
			forgotten := &forgetter{}
			step := &deprovisioning.DeleteRuntime{KCP: c, Config: cfg, Runtimes: forgotten}
			res, err := step.Run(t.Context(), op)

			if tc.noRuntime {
				processtest.MustOutcome(t, "delete_runtime", processtest.Done, res, err)
				if ok, deleting := exists(t, rt); !ok || deleting {
					t.Error("a Runtime CR was touched although the operation names no runtime")
				}
				if ok, _ := exists(t, ov); !ok {
					t.Error("the overrides Secret was deleted although the operation names no runtime")
				}
				return
			}
			if tc.finalizer {
				processtest.MustOutcome(t, "delete_runtime while held", processtest.Retry, res, err)
				if res.RetryAfter != cfg.RemovalPoll {
					t.Errorf("retry after %s, want %s", res.RetryAfter, cfg.RemovalPoll)
				}
				if !strings.Contains(op.Description, op.Instance.ShootName) {
					t.Errorf("description %q does not name the cluster %s", op.Description, op.Instance.ShootName)
				}
				if ok, deleting := exists(t, rt); !ok || !deleting {
					t.Fatalf("held CR: exists %v, being deleted %v; want both", ok, deleting)
				}
				if len(forgotten.ids) != 0 {
					t.Error("runtime client forgotten while the cluster is still being removed")
				}
				// The cluster may still need its overrides until it is gone.
				if ok, _ := exists(t, ov); !ok {
					t.Error("overrides Secret deleted while the cluster is still being removed")
				}
				releaseFinalizers(t, rt)
				res, err = step.Run(t.Context(), op)
			}
			processtest.MustOutcome(t, "delete_runtime", processtest.Done, res, err)
			if ok, _ := exists(t, rt); ok {
				t.Error("Runtime CR still exists after the step finished")
			}
			if ok, _ := exists(t, ov); ok {
				t.Error("overrides Secret still exists after the step finished")
			}
			if len(forgotten.ids) != 1 || forgotten.ids[0] != runtimeID {
				t.Errorf("runtime clients forgotten: %v, want the gone runtime %s", forgotten.ids, runtimeID)
			}
			res, err = step.Run(t.Context(), op)
			processtest.MustOutcome(t, "delete_runtime re-run", processtest.Done, res, err)
		})
	}
}

// forgetter records which runtimes' cached clients were dropped.
type forgetter struct{ ids []string }

func (f *forgetter) Forget(runtimeID string) { f.ids = append(f.ids, runtimeID) }
