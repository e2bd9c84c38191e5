package binding_test

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/storage"
)

// runtimeObjects counts what the runtime holds for a binding ID: its ServiceAccounts and
// ClusterRoleBindings.
func (b *bundle) runtimeObjects(instanceID, bindingID string) int {
	b.t.Helper()
	labels := client.MatchingLabels{binding.LabelBindingID: bindingID, controlplane.LabelInstanceID: instanceID}
	var crbs rbacv1.ClusterRoleBindingList
	var sas corev1.ServiceAccountList
	if err := b.kcp.List(b.ctx, &crbs, labels); err != nil {
		b.t.Fatal(err)
	}
	if err := b.kcp.List(b.ctx, &sas, labels); err != nil {
		b.t.Fatal(err)
	}
	n := len(crbs.Items)
	for _, sa := range sas.Items {
		if sa.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// Concurrent unbinds of one binding: the one whose delete removed it answers 200, every other
// 410 Gone (OSB), and the binding is gone from the database and the runtime (issue 38 C).
func TestConcurrentUnbindsOneSucceedsOthersGone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	const bindings, unbinds = 4, 4
	for i := range bindings {
		id := fmt.Sprintf("twice-%d", i)
		b.mustBind(inst, id, "")
		errs := make([]error, unbinds)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for j := range unbinds {
			wg.Go(func() {
				<-start
				errs[j] = b.svc.Unbind(b.ctx, inst, id)
			})
		}
		close(start)
		wg.Wait()
		ok, gone := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case kindOf(err) == binding.KindGone:
				gone++
			default:
				t.Errorf("unbind %s: %v", id, err)
			}
		}
		if ok != 1 || gone != unbinds-1 {
			t.Errorf("%d concurrent unbinds of %s: %d answered 200 and %d 410; want 1 and %d", unbinds, id, ok, gone, unbinds-1)
		}
		if n := b.runtimeObjects(inst, id); n != 0 {
			t.Errorf("binding %s: %d objects left in the runtime", id, n)
		}
	}
	if left := b.bindings(inst); len(left) != 0 {
		t.Errorf("bindings left: %+v", left)
	}
}

// A bind and an unbind of one binding ID at once: one wins cleanly. The bind either completes
// (and the unbind, before it or after, answers 410 or 200) or answers 409 Conflict saying it
// was unbound while it was being created; the unbind answers 200 or 410; nothing half-made stays
// (a binding row is either done with its objects in the runtime, or gone with them), and no 5xx
// (issue 38, defect 7). The unbind retries its 410 until the bind has ended, so that it lands
// inside the bind as often as it can.
func TestBindRacingUnbindOneWinsCleanly(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	const rounds = 8
	hits := 0
	for i := range rounds {
		id := fmt.Sprintf("race-unbind-%d", i)
		var bindErr, unbindErr error
		var unbound bool
		bound := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			defer close(bound)
			_, bindErr = b.bind(inst, id, "")
		})
		wg.Go(func() {
			for {
				select {
				case <-bound:
					return
				default:
				}
				unbindErr = b.svc.Unbind(b.ctx, inst, id)
				if kindOf(unbindErr) != binding.KindGone {
					unbound = true
					return
				}
			}
		})
		wg.Wait()
		switch {
		case bindErr == nil:
		case kindOf(bindErr) == binding.KindConflict:
			hits++
		default:
			t.Errorf("bind %s racing its unbind: %v (kind %d); want done or 409", id, bindErr, kindOf(bindErr))
		}
		if unbound && unbindErr != nil {
			t.Errorf("unbind %s racing its bind: %v (kind %d); want 200 or 410", id, unbindErr, kindOf(unbindErr))
		}
		// Settled: a binding done with its objects, or none and no objects.
		row, err := b.store.Binding(b.ctx, id)
		objects := b.runtimeObjects(inst, id)
		switch {
		case err == nil && row.State == storage.BindingSucceeded && objects == 2:
		case err == nil:
			t.Errorf("binding %s left %s with %d runtime objects (bind: %v, unbind: %v)", id, row.State, objects, bindErr, unbindErr)
		case objects != 0:
			t.Errorf("binding %s gone, %d objects left in the runtime (bind: %v, unbind: %v)", id, objects, bindErr, unbindErr)
		}
		if err == nil {
			if err := b.svc.Unbind(b.ctx, inst, id); err != nil {
				t.Fatalf("unbinding %s after the race: %v", id, err)
			}
		}
	}
	t.Logf("%d of %d unbinds landed inside their bind", hits, rounds)
}
