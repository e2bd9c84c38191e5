package process

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
)

func TestOnlyKymaReadyOrErrorWakesCheckKyma(t *testing.T) {
	t.Parallel()
	k := func(state kyma.State) *kyma.Kyma {
		x := &kyma.Kyma{}
		x.Status.State = state
		return x
	}
	tests := []struct {
		name     string
		old, obj *kyma.Kyma
		want     bool
	}{
		{"keb creates the Kyma CR", nil, k(""), false},
		{"Lifecycle Manager reports Processing", k(""), k(kyma.StateProcessing), false},
		{"modules installed", k(kyma.StateProcessing), k(kyma.StateReady), true},
		{"a module fails", k(kyma.StateProcessing), k(kyma.StateError), true},
		{"a module warns", k(kyma.StateProcessing), k(kyma.StateWarning), false},
		{"Ready rewritten", k(kyma.StateReady), k(kyma.StateReady), false},
		{"Ready seen after the first list", nil, k(kyma.StateReady), true},
	}
	for _, tc := range tests {
		if got := kymaEndsAWait(healthOf(tc.old), kyma.HealthOf(tc.obj)); got != tc.want {
			t.Errorf("%s: wakes %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBTPOperatorInstalledWakesInjectBTPManager: the btp-operator module's
// first state past Processing (its CR judged) wakes inject_btp_manager,
// which waits for the BtpOperator kind; nothing else about it does.
func TestBTPOperatorInstalledWakesInjectBTPManager(t *testing.T) {
	t.Parallel()
	k := func(btp kyma.State) *kyma.Kyma {
		x := &kyma.Kyma{}
		x.Status.State = kyma.StateProcessing
		x.Status.Modules = []kyma.ModuleStatus{{Name: "istio", State: kyma.StateReady}}
		if btp != "" {
			x.Status.Modules = append(x.Status.Modules, kyma.ModuleStatus{Name: "btp-operator", State: btp})
		}
		return x
	}
	w := &Watcher{}
	tests := []struct {
		name     string
		old, obj *kyma.Kyma
		want     bool
	}{
		{"module listed, installing", k(""), k(kyma.StateProcessing), false},
		{"installed: BTP Manager misses the Secret", k(kyma.StateProcessing), k(kyma.StateWarning), true},
		{"installed and Ready at once", k(kyma.StateProcessing), k(kyma.StateReady), true},
		{"Warning to Ready: installed before", k(kyma.StateWarning), k(kyma.StateReady), false},
		{"no btp-operator module", k(""), k(""), false},
	}
	for _, tc := range tests {
		if got := w.kymaWakes(healthOf(tc.old), kyma.HealthOf(tc.obj)); got != tc.want {
			t.Errorf("%s: wakes %v, want %v", tc.name, got, tc.want)
		}
	}
}

// healthOf is k's health, nil for no CR.
func healthOf(k *kyma.Kyma) *kyma.Health {
	if k == nil {
		return nil
	}
	h := kyma.HealthOf(k)
	return &h
}

// kymaStore records what KymaStates writes; the first failures calls fail.
type kymaStore struct {
	mu       sync.Mutex
	batches  [][]storage.KymaState
	failures int
	written  chan struct{}
}

func (s *kymaStore) SetKymaStates(_ context.Context, states []storage.KymaState) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures > 0 {
		s.failures--
		return 0, errors.New("database down")
	}
	s.batches = append(s.batches, append([]storage.KymaState(nil), states...))
	s.written <- struct{}{}
	return int64(len(states)), nil
}

func (s *kymaStore) all() map[string]storage.KymaState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]storage.KymaState{}
	for _, b := range s.batches {
		for _, st := range b {
			out[st.RuntimeID] = st
		}
	}
	return out
}

// TestKymaStatesWritesTheLatestOfEachRuntimeInBatches: changes observed
// before a write coalesce per runtime (the latest wins), a write holds at
// most maxBatch runtimes, and a failed write is retried with what is newest.
func TestKymaStatesWritesTheLatestOfEachRuntimeInBatches(t *testing.T) {
	t.Parallel()
	store := &kymaStore{failures: 1, written: make(chan struct{}, 100)}
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	k := NewKymaStates(store, log)
	k.RetryAfter = time.Millisecond
	// Observed before the writer runs: 1,200 runtimes, one of them thrice.
	for i := range 1200 {
		k.Observe(fmt.Sprintf("rt-%d", i), int64(i+1), &kyma.Health{State: kyma.StateProcessing})
	}
	k.Observe("rt-x", 1, &kyma.Health{State: kyma.StateProcessing})
	k.Observe("rt-x", 2, &kyma.Health{State: kyma.StateError, Modules: []kyma.ModuleHealth{{Name: "foo", State: kyma.StateError}}})
	k.Observe("rt-gone", 3, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for total := 0; total < 1202; {
		select {
		case <-store.written:
		case <-time.After(30 * time.Second):
			t.Fatalf("written %d of 1202 runtimes", total)
		}
		total = len(store.all())
	}
	store.mu.Lock()
	for i, b := range store.batches {
		if len(b) > maxBatch {
			t.Errorf("batch %d holds %d runtimes, more than %d", i, len(b), maxBatch)
		}
	}
	store.mu.Unlock()
	all := store.all()
	if x := all["rt-x"]; x.State != "Error" || x.Version != 2 || string(x.Modules) != `[{"name":"foo","state":"Error"}]` {
		t.Errorf("rt-x written as %+v (%s), want its latest state", x, x.Modules)
	}
	if g := all["rt-gone"]; g.Modules != nil || g.State != "" {
		t.Errorf("a deleted CR written as %+v, want no state and no modules", g)
	}
}
