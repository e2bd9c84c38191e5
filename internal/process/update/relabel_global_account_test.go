package update_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestRelabelGlobalAccount: after a subaccount moved, the update gives the
// Runtime and Kyma CRs the new global account's label and leaves every
// other label as it was; an update that moved nothing writes nothing.
func TestRelabelGlobalAccount(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	ns := processtest.Namespace(t, c, "relabel")
	op := newOp(t, nil)
	rt := runtimetest.Runtime(ns, op.Instance.RuntimeID)
	rt.Labels[controlplane.LabelGlobalAccountID] = "ga-old"
	rt.Labels["operator.example.com/own"] = "kept"
	if err := c.Create(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	k := &kyma.Kyma{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kyma.Name(op.Instance.RuntimeID),
		Labels: map[string]string{controlplane.LabelGlobalAccountID: "ga-old", "operator.example.com/own": "kept"}},
		Spec: kyma.KymaSpec{Channel: "regular"}}
	if err := c.Create(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Namespace = ns
	step := &update.RelabelGlobalAccount{KCP: c, Config: cfg}
	labels := func() (runtimeGA, kymaGA, runtimeOwn, kymaOwn string) {
		t.Helper()
		gotRT, gotK := &infrastructuremanager.Runtime{}, &kyma.Kyma{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(rt), gotRT); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(k), gotK); err != nil {
			t.Fatal(err)
		}
		return gotRT.Labels[controlplane.LabelGlobalAccountID], gotK.Labels[controlplane.LabelGlobalAccountID],
			gotRT.Labels["operator.example.com/own"], gotK.Labels["operator.example.com/own"]
	}

	// Moved nothing: nothing written.
	op.Instance.GlobalAccountID = "ga-new"
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "no move", processtest.Done, res, err)
	if r, k, _, _ := labels(); r != "ga-old" || k != "ga-old" {
		t.Fatalf("labels %s, %s changed by an update that moved nothing", r, k)
	}

	op.Request = &storage.UpdateRequest{PlanID: op.Instance.PlanID, PlanName: op.Instance.PlanName, GlobalAccountMoved: true}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "moved", processtest.Done, res, err)
	if r, k, ro, ko := labels(); r != "ga-new" || k != "ga-new" || ro != "kept" || ko != "kept" {
		t.Errorf("Runtime CR %s (own %s), Kyma CR %s (own %s); want ga-new, the own labels kept", r, ro, k, ko)
	}
	if op.Record.Conclusion != "Operation succeeded: the runtime is relabelled with global account ga-new" {
		t.Errorf("conclusion %q", op.Record.Conclusion)
	}
}
