package infrasim

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// TestChangedSpecIsAppliedLikeACreation: a Ready Runtime whose spec changes
// leaves Ready (Pending) and returns to Ready with a new transition of its
// Provisioned condition, on the same cluster, writing nothing but status; a
// change a fault hits ends Failed with the Gardener error, and is applied
// once the fault is gone.
func TestChangedSpecIsAppliedLikeACreation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	const ns = "infrasim-update"
	createNamespace(t, kcp, ns)
	var mu sync.Mutex
	failing := ""
	sim, _ := startSimulator(t, ns, Options{Mode: ModeShared, Delay: 2 * time.Second, Faults: func(rt *infrastructuremanager.Runtime) *Fault {
		mu.Lock()
		defer mu.Unlock()
		if failing == "" || rt.Spec.Shoot.Provider.Workers[0].Machine.Type != "Standard_D64s_v5" {
			return nil
		}
		return &Fault{Message: failing, Permanent: true}
	}})

	name := unique("scaled")
	rt := newRuntime(ns, name, "rid-"+name)
	if err := kcp.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	ready := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
	created := meta.FindStatusCondition(ready.Status.Conditions, infrastructuremanager.ConditionProvisioned)

	time.Sleep(time.Second) // transition times have whole seconds
	ready.Spec.Shoot.Provider.Workers[0].Maximum = 30
	if err := kcp.Update(ctx, ready); err != nil {
		t.Fatal(err)
	}
	waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StatePending)
	applied := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
	again := meta.FindStatusCondition(applied.Status.Conditions, infrastructuremanager.ConditionProvisioned)
	if !again.LastTransitionTime.After(created.LastTransitionTime.Time) || again.Reason != infrastructuremanager.ReasonConfigurationCompleted {
		t.Errorf("Provisioned after the change %+v, before %+v: want a later transition", again, created)
	}
	if applied.Labels["infrasim"] != "" || len(applied.Annotations) != 0 {
		t.Errorf("the simulator wrote metadata the infrastructure manager does not: %v %v", applied.Labels, applied.Annotations)
	}
	if n := sim.clusters.started.Load(); n != 1 {
		t.Errorf("started %d clusters, want the one the runtime already had", n)
	}

	// A change the infrastructure cannot apply.
	mu.Lock()
	failing = "simulated: no capacity for Standard_D64s_v5 in westeurope"
	mu.Unlock()
	applied.Spec.Shoot.Provider.Workers[0].Machine.Type = "Standard_D64s_v5"
	if err := kcp.Update(ctx, applied); err != nil {
		t.Fatal(err)
	}
	failed := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateFailed)
	if c := infrastructuremanager.Newest(failed.Status.Conditions); c.Reason != infrastructuremanager.ReasonGardenerError || c.Message != failing {
		t.Errorf("failed change: %+v", failed.Status)
	}
	mu.Lock()
	failing = ""
	mu.Unlock()
	waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
}

// TestTransientFaultRecovers: a creation hit by a transient fault is Failed
// with the Gardener error for a while, then Ready, without a new spec.
func TestTransientFaultRecovers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	const ns = "infrasim-transient"
	createNamespace(t, kcp, ns)
	faults, err := ParseFaults("transient=sa-flaky")
	if err != nil {
		t.Fatal(err)
	}
	startSimulator(t, ns, Options{Mode: ModeShared, Faults: faults})
	name := unique("flaky")
	rt := newRuntime(ns, name, "rid-"+name)
	rt.Labels[controlplane.LabelSubAccountID] = "sa-flaky"
	if err := kcp.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	failed := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateFailed)
	if c := infrastructuremanager.Newest(failed.Status.Conditions); c.Reason != infrastructuremanager.ReasonGardenerError {
		t.Fatalf("Failed with %+v, want a Gardener error", c)
	}
	ready := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
	if ready.Generation != failed.Generation {
		t.Errorf("recovered at generation %d, failed at %d: the recovery needed a new spec", ready.Generation, failed.Generation)
	}
}
