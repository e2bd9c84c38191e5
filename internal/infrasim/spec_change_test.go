package infrasim

import (
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// TestChangedSpecIsAppliedLikeACreation: a Ready Runtime whose spec changes
// leaves Ready (Pending, naming the generation) and returns to Ready with
// status.observedGeneration at the new generation, on the same cluster; one
// the FailRuntimes hook rejects by then ends Failed instead.
func TestChangedSpecIsAppliedLikeACreation(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	const ns = "infrasim-update"
	createNamespace(t, kcp, ns)
	var mu sync.Mutex
	failing := map[string]string{}
	sim, _ := startSimulator(t, ns, Options{Mode: ModeShared, Delay: 2 * time.Second, FailRuntimes: func(id string) string {
		mu.Lock()
		defer mu.Unlock()
		return failing[id]
	}})

	rt := newRuntime(ns, "scaled", "rid-scaled")
	rt.Spec.Shoot.Provider.Workers = []infrastructuremanager.Worker{{Name: "cpu-worker-0", MachineType: "Standard_D2s_v5", Minimum: 3, Maximum: 20}}
	if err := kcp.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	ready := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
	if ready.Status.ObservedGeneration != ready.Generation {
		t.Fatalf("Ready at observedGeneration %d, generation %d", ready.Status.ObservedGeneration, ready.Generation)
	}

	ready.Spec.Shoot.Provider.Workers[0].Maximum = 30
	if err := kcp.Update(ctx, ready); err != nil {
		t.Fatal(err)
	}
	changed := ready.Generation
	if changed <= ready.Status.ObservedGeneration {
		t.Fatalf("the spec change did not bump the generation (%d)", changed)
	}
	pending := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StatePending)
	if pending.Status.ObservedGeneration >= changed {
		t.Errorf("Pending already reports generation %d as applied", pending.Status.ObservedGeneration)
	}
	applied := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
	if applied.Status.ObservedGeneration != changed {
		t.Errorf("Ready again at observedGeneration %d, want %d", applied.Status.ObservedGeneration, changed)
	}
	if n := sim.clusters.started.Load(); n != 1 {
		t.Errorf("started %d clusters, want the one the runtime already had", n)
	}

	// A change the infrastructure cannot apply.
	mu.Lock()
	failing["rid-scaled"] = "simulated: no capacity for Standard_D64s_v5 in westeurope"
	mu.Unlock()
	applied.Spec.Shoot.Provider.Workers[0].MachineType = "Standard_D64s_v5"
	if err := kcp.Update(ctx, applied); err != nil {
		t.Fatal(err)
	}
	failed := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateFailed)
	// Failed reports on the spec it failed to apply (observedGeneration at
	// the generation), so that a wait can tell it from an older failure.
	if failed.Status.Message != failing["rid-scaled"] || failed.Status.ObservedGeneration != failed.Generation {
		t.Errorf("failed change: %+v (generation %d)", failed.Status, failed.Generation)
	}
}
