package process

import (
	"github.com/kyma-keb/keb/internal/kyma"
)

// KymaObserver is told what the control-plane watch sees of each runtime's
// Kyma CR (KymaStates is one).
type KymaObserver interface {
	// Observe records the health of the runtime's Kyma CR at its
	// resourceVersion version; h nil: the CR is gone.
	Observe(runtimeID string, version int64, h *kyma.Health)
}

// kymaChanged stores a Kyma CR's arrival or change: each change of its
// health goes to w.Kyma, and a change that ends a wait (kymaWakes) wakes the
// operation waiting on its runtime. Deletions wake as every deletion does
// (Watcher.deleted; delete_kyma waits for the CR to be gone).
func (w *Watcher) kymaChanged(store *seenStore, wakes *wakeQueue, e *kymaEvent, initialList bool) {
	old := store.putKyma(e)
	if old == nil {
		h := e.health()
		w.observeKyma(e.id, e.version, &h)
		// The first list wakes nothing: a wait begun before it polls.
		if !initialList && w.kymaWakes(nil, h) {
			wakes.add(e.id)
		}
		return
	}
	if old.state == e.state && old.modules == e.modules {
		return // the same health: nothing to tell, nothing ends
	}
	prev, h := old.health(), e.health()
	w.observeKyma(e.id, e.version, &h)
	if w.kymaWakes(&prev, h) {
		wakes.add(e.id)
	}
}

// observeKyma tells w.Kyma of a runtime's Kyma CR's health at version, or
// that it is gone (h nil).
func (w *Watcher) observeKyma(runtimeID string, version int64, h *kyma.Health) {
	if w.Kyma == nil || runtimeID == "" {
		return
	}
	if h != nil && h.State == "" && len(h.Modules) == 0 {
		// Not reported on yet (keb's own create): the database holds no
		// state for it already, and writing "none" would cost a statement
		// per provisioning.
		return
	}
	w.Kyma.Observe(runtimeID, version, h)
}

// kymaWakes reports whether a Kyma CR's change (from old, nil when it is
// new, to h) ends a wait: the btp-operator module's installation
// (inject_btp_manager waits for the runtime to serve the BtpOperator kind),
// or, with WakeOnKyma, check_kyma's.
func (w *Watcher) kymaWakes(old *kyma.Health, h kyma.Health) bool {
	return btpOperatorInstalled(old, h) || (w.WakeOnKyma && kymaEndsAWait(old, h))
}

// btpOperatorInstalled reports whether Lifecycle Manager reports the
// btp-operator module installed (its default CR judged by BTP Manager:
// Ready, Warning or Error) for the first time: the runtime serves the
// BtpOperator kind from then on.
func btpOperatorInstalled(old *kyma.Health, h kyma.Health) bool {
	installed := func(x *kyma.Health) bool {
		if x == nil {
			return false
		}
		m, ok := x.Module(kyma.ModuleBTPOperator)
		return ok && (m.State == kyma.StateReady || m.State == kyma.StateWarning || m.State == kyma.StateError)
	}
	return installed(&h) && !installed(old)
}

// kymaEndsAWait reports whether a Kyma CR's change can end check_kyma's
// wait or change what it tells the platform: it turned Ready or Error.
func kymaEndsAWait(old *kyma.Health, h kyma.Health) bool {
	if h.State != kyma.StateReady && h.State != kyma.StateError {
		return false
	}
	return old == nil || old.State != h.State
}
