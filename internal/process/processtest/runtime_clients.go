package processtest

import (
	"context"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RuntimeClients is a fake of the runtime client cache: it answers every runtime ID with
// Runtime or Err, and records the calls.
type RuntimeClients struct {
	Runtime client.Client
	Err     error

	calls atomic.Int32
	asked atomic.Value // string: the runtime ID last asked for
}

// Client records the call and returns Runtime, Err.
func (r *RuntimeClients) Client(_ context.Context, runtimeID string) (client.Client, error) {
	r.calls.Add(1)
	r.asked.Store(runtimeID)
	return r.Runtime, r.Err
}

// Calls is how many times Client was called.
func (r *RuntimeClients) Calls() int32 { return r.calls.Load() }

// Asked is the runtime ID Client was last called with, or "" before the first call.
func (r *RuntimeClients) Asked() string {
	id, _ := r.asked.Load().(string)
	return id
}
