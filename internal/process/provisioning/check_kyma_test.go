package provisioning_test

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// TestCheckKyma: without APP_PROVISIONING_AWAIT_KYMA_READY the step is done
// at once; with it, it waits through Processing and Error (telling the
// modules' errors) until Lifecycle Manager reports Ready.
func TestCheckKyma(t *testing.T) {
	t.Parallel()
	ensureNamespace(t, controlplane.Namespace)
	c := kcpClient(t)
	op := initializedOp(t, catalog.AzurePlanID, `{"name":"x"}`, process.Record{Provider: "azure", ProviderRegion: "westeurope"})
	cfg := testConfig(newNamespace(t))

	off := &provisioning.CheckKyma{KCP: c, Config: cfg}
	res, err := off.Run(t.Context(), op)
	processtest.MustOutcome(t, "check_kyma off", processtest.Done, res, err)

	cfg.AwaitKymaReady, cfg.KymaTimeout = true, 10*time.Minute
	step := &provisioning.CheckKyma{KCP: c, Config: cfg}
	if step.Timeout() != 10*time.Minute {
		t.Errorf("timeout %s", step.Timeout())
	}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "check_kyma without a Kyma CR", processtest.Failure, res, err)

	apply := &provisioning.ApplyKyma{KCP: c, Catalog: processtest.Catalog(t), Config: cfg}
	res, err = apply.Run(t.Context(), op)
	processtest.MustOutcome(t, "apply_kyma", processtest.Done, res, err)
	k := &kyma.Kyma{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, k); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status kyma.KymaStatus
		want   processtest.Outcome
		desc   []string
	}{
		{want: processtest.Retry, desc: []string{"Kyma state: not reported yet"}},
		{status: kyma.KymaStatus{State: kyma.StateProcessing, Modules: []kyma.ModuleStatus{{Name: "istio", State: kyma.StateProcessing}}},
			want: processtest.Retry, desc: []string{"Kyma state: Processing", "module istio: Processing"}},
		{status: kyma.KymaStatus{State: kyma.StateError, Modules: []kyma.ModuleStatus{{Name: "istio", State: kyma.StateReady},
			{Name: "foo", State: kyma.StateError, Message: `module template for module "foo" not found`}}},
			want: processtest.Retry, desc: []string{"Kyma state: Error", `module foo: Error (module template for module "foo" not found)`}},
		{status: kyma.KymaStatus{State: kyma.StateReady, Modules: []kyma.ModuleStatus{{Name: "istio", State: kyma.StateReady}}},
			want: processtest.Done},
	} {
		if tc.status.State != "" {
			k.Status = tc.status
			if err := c.Status().Update(t.Context(), k); err != nil {
				t.Fatal(err)
			}
		}
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, "check_kyma at "+string(tc.status.State), tc.want, res, err)
		if tc.want == processtest.Retry && res.RetryAfter != cfg.RuntimePoll {
			t.Errorf("%s: retry after %s, want %s", tc.status.State, res.RetryAfter, cfg.RuntimePoll)
		}
		if m := processtest.MissingFrom(op.Description, tc.desc...); m != "" {
			t.Errorf("%s: description %q does not say %q", tc.status.State, op.Description, m)
		}
	}
}
