package process

import (
	"context"
	"fmt"
	"reflect"
	"strconv"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
)

// KymaObserver is told what the control-plane watch sees of each runtime's
// Kyma CR (KymaStates is one).
type KymaObserver interface {
	// Observe records the health of the runtime's Kyma CR at its
	// resourceVersion version; h nil: the CR is gone.
	Observe(runtimeID string, version int64, h *kyma.Health)
}

// watchKymas adds the Kyma CRs to the watch c: each change of a CR's health
// goes to w.Kyma, and a change that ends a wait (kymaWakes) wakes the
// operation waiting on its runtime. Deletions wake as every deletion does
// (delete_kyma waits for the CR to be gone).
func (w *Watcher) watchKymas(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &kyma.Kyma{})
	if err != nil {
		return fmt.Errorf("watching Kyma CRs: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initialList bool) {
			k, ok := o.(*kyma.Kyma)
			if !ok {
				return
			}
			w.observeKyma(k, false)
			// The first list wakes nothing: a wait begun before it polls.
			if !initialList && w.kymaWakes(nil, k) {
				w.changed(ctx, k)
			}
		},
		UpdateFunc: func(old, o any) {
			prev, _ := old.(*kyma.Kyma)
			k, ok := o.(*kyma.Kyma)
			if !ok {
				return
			}
			if prev == nil || !reflect.DeepEqual(kyma.HealthOf(prev), kyma.HealthOf(k)) {
				w.observeKyma(k, false)
			}
			if w.kymaWakes(prev, k) {
				w.changed(ctx, k)
			}
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if k, ok := o.(*kyma.Kyma); ok {
				w.observeKyma(k, true)
				w.changed(ctx, k)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("handling Kyma CR events: %w", err)
	}
	return nil
}

// observeKyma tells w.Kyma of k's health, or that it is gone.
func (w *Watcher) observeKyma(k *kyma.Kyma, gone bool) {
	if w.Kyma == nil {
		return
	}
	runtimeID := k.Labels[controlplane.LabelRuntimeID]
	if runtimeID == "" {
		return
	}
	// resourceVersions are etcd revisions in every API server keb runs
	// against; one that is not a number is written unconditionally.
	version, _ := strconv.ParseInt(k.ResourceVersion, 10, 64)
	if gone {
		w.Kyma.Observe(runtimeID, version, nil)
		return
	}
	h := kyma.HealthOf(k)
	if h.State == "" && len(h.Modules) == 0 {
		// Not reported on yet (keb's own create): the database holds no
		// state for it already, and writing "none" would cost a statement
		// per provisioning.
		return
	}
	w.Kyma.Observe(runtimeID, version, &h)
}

// kymaWakes reports whether a Kyma CR's change ends a wait: the btp-operator
// module's installation (inject_btp_manager waits for the runtime to serve
// the BtpOperator kind), or, with WakeOnKyma, check_kyma's.
func (w *Watcher) kymaWakes(old, k *kyma.Kyma) bool {
	return btpOperatorInstalled(old, k) || (w.WakeOnKyma && kymaEndsAWait(old, k))
}

// btpOperatorInstalled reports whether Lifecycle Manager reports the
// btp-operator module installed (its default CR judged by BTP Manager:
// Ready, Warning or Error) for the first time: the runtime serves the
// BtpOperator kind from then on.
func btpOperatorInstalled(old, k *kyma.Kyma) bool {
	installed := func(x *kyma.Kyma) bool {
		if x == nil {
			return false
		}
		m, ok := kyma.HealthOf(x).Module(kyma.ModuleBTPOperator)
		return ok && (m.State == kyma.StateReady || m.State == kyma.StateWarning || m.State == kyma.StateError)
	}
	return installed(k) && !installed(old)
}

// kymaEndsAWait reports whether a Kyma CR's change can end check_kyma's
// wait or change what it tells the platform: it turned Ready or Error.
func kymaEndsAWait(old, k *kyma.Kyma) bool {
	if k.Status.State != kyma.StateReady && k.Status.State != kyma.StateError {
		return false
	}
	return old == nil || old.Status.State != k.Status.State
}
