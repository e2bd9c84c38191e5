package process

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
)

// kymaStateStore records runtimes' Kyma states; *storage.Store is one.
type kymaStateStore interface {
	SetKymaStates(ctx context.Context, states []storage.KymaState) (int64, error)
}

// KymaStates keeps the database's copy of every runtime's Kyma state
// (instances.kyma_state, kyma_modules) in step with what the control-plane
// watch sees, so that /info/runtimes filters and counts on an indexed column
// and GET instance reads it with the instance row, without a request to the
// control plane or the runtime. The watch tells it of every change
// (Observe); it coalesces them per runtime and writes them in batches of up
// to maxBatch in one statement each: a watch's first list of 10,000 Kyma CRs
// costs 20 statements, a Lifecycle Manager status change one (shared with
// the changes that arrive while it runs). Every replica's watch writes;
// storage writes a row only when it changes, and never an older state over a
// newer one (KymaState.Version), so replicas agree whatever their lag.
type KymaStates struct {
	store kymaStateStore
	log   logrus.FieldLogger
	// RetryAfter is how long a failed write waits before it is tried again
	// (with whatever changed meanwhile).
	RetryAfter time.Duration

	mu      sync.Mutex
	pending map[string]storage.KymaState
	// peak is the most runtimes pending since pending was made: a watch's
	// first list fills it with the whole fleet, and a Go map never gives
	// that room back, so flush makes a new one once it is drained.
	peak   int
	signal chan struct{}
}

// maxBatch bounds the runtimes of one statement.
const maxBatch = 500

// NewKymaStates returns a recorder writing to store; Run writes.
func NewKymaStates(store kymaStateStore, log logrus.FieldLogger) *KymaStates {
	return &KymaStates{store: store, log: log, RetryAfter: 5 * time.Second,
		pending: map[string]storage.KymaState{}, signal: make(chan struct{}, 1)}
}

// Observe records what the watch saw of a runtime's Kyma CR at
// resourceVersion version (0 when not a number); h nil means the CR is gone.
// It never blocks on the database.
func (k *KymaStates) Observe(runtimeID string, version int64, h *kyma.Health) {
	st := storage.KymaState{RuntimeID: runtimeID, Version: version}
	if h != nil {
		st.State = string(h.State)
		modules := h.Modules
		if modules == nil {
			modules = []kyma.ModuleHealth{}
		}
		// Encoding plain structs of strings cannot fail.
		st.Modules, _ = json.Marshal(modules)
	}
	// One watch delivers a CR's events in order: the latest wins.
	k.mu.Lock()
	k.pending[runtimeID] = st
	k.peak = max(k.peak, len(k.pending))
	k.mu.Unlock()
	select {
	case k.signal <- struct{}{}:
	default:
	}
}

// Run writes what was observed until ctx is done.
func (k *KymaStates) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.signal:
		}
		for k.flush(ctx) {
		}
	}
}

// flush writes one batch and reports whether more is pending. A failed
// write puts its states back (unless newer ones arrived) and waits
// RetryAfter.
func (k *KymaStates) flush(ctx context.Context) bool {
	k.mu.Lock()
	batch := make([]storage.KymaState, 0, min(len(k.pending), maxBatch))
	for id, st := range k.pending {
		if len(batch) == maxBatch {
			break
		}
		batch = append(batch, st)
		delete(k.pending, id)
	}
	if len(k.pending) == 0 && k.peak > maxBatch {
		k.pending, k.peak = map[string]storage.KymaState{}, 0
	}
	k.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	if _, err := k.store.SetKymaStates(ctx, batch); err != nil {
		if ctx.Err() != nil {
			return false
		}
		k.log.WithError(err).WithField("runtimes", len(batch)).Warn("recording Kyma states; retrying")
		k.mu.Lock()
		for _, st := range batch {
			if _, newer := k.pending[st.RuntimeID]; !newer {
				k.pending[st.RuntimeID] = st
			}
		}
		k.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-time.After(k.RetryAfter):
		}
		return true
	}
	k.mu.Lock()
	more := len(k.pending) > 0
	k.mu.Unlock()
	return more
}
