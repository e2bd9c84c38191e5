package kube

import (
	"context"
	"fmt"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Watched reads a few objects every operation needs (configuration operators keep in the control
// plane) from a watch of only those, once the watch has synced, and from the API server before
// that and after the watch stopped. A read per operation costs the API server a request, and a
// labelled list a scan of the namespace; the watch costs an event when an operator changes one
// of the objects, and reaches keb within moments of the change.
//
// The watch holds what its cache options select, nothing else: a read of any other object finds
// nothing (a Get answers NotFound), so a Watched serves only reads of what it selects.
type Watched struct {
	cache  cache.Cache
	direct client.Reader
	kinds  []client.Object
	synced atomic.Bool
}

var _ client.Reader = (*Watched)(nil)

// NewWatched watches the objects of kinds that opts select, of the API server at cfg; direct
// serves reads until Start has synced the watch.
func NewWatched(cfg *rest.Config, opts cache.Options, direct client.Reader, kinds ...client.Object) (*Watched, error) {
	if opts.DefaultTransform == nil {
		opts.DefaultTransform = cache.TransformStripManagedFields()
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating a watch: %w", err)
	}
	return &Watched{cache: c, direct: direct, kinds: kinds}, nil
}

// Start watches until ctx is done; reads are served from the watch once it has synced.
func (w *Watched) Start(ctx context.Context) error {
	// A stopped watch is never read: its objects would go stale.
	defer w.synced.Store(false)
	for _, obj := range w.kinds {
		if _, err := w.cache.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- w.cache.Start(ctx) }()
	if w.cache.WaitForCacheSync(ctx) {
		w.synced.Store(true)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("watching: %w", err)
	}
	return nil
}

// Synced reports whether reads are served from the watch.
func (w *Watched) Synced() bool { return w.synced.Load() }

// Get implements client.Reader.
func (w *Watched) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if w.synced.Load() {
		return w.cache.Get(ctx, key, obj, opts...)
	}
	return w.direct.Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (w *Watched) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if w.synced.Load() {
		return w.cache.List(ctx, list, opts...)
	}
	return w.direct.List(ctx, list, opts...)
}
