package overrides

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sources reads the override ConfigMaps and Secrets of one namespace for Resolve from a watch of
// only those (labelled provisioning-runtime-override: "true"), once the watch has synced, and from
// the API server before that. Every provisioning resolves its overrides, and two labelled lists
// per provisioning cost the API server a scan of every ConfigMap and Secret in the namespace
// (each runtime's kubeconfig and overrides Secret among them), growing with the runtimes; the
// watch sends only the few labelled objects, and only when an operator changes one. An override
// an operator changes reaches the watch within moments of the change.
type Sources struct {
	cache  cache.Cache
	direct client.Reader
	synced atomic.Bool
}

var _ client.Reader = (*Sources)(nil)

// NewSources watches the override sources in namespace of the API server at cfg; direct serves
// reads until the watch has synced (Start), and every Get.
func NewSources(cfg *rest.Config, scheme *k8sruntime.Scheme, namespace string, direct client.Reader) (*Sources, error) {
	c, err := cache.New(cfg, cache.Options{
		Scheme:               scheme,
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{LabelOverride: labelTrue}),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the watch of override sources: %w", err)
	}
	return &Sources{cache: c, direct: direct}, nil
}

// Start watches until ctx is done. Reads are served from the watch once it has synced.
func (s *Sources) Start(ctx context.Context) error {
	// A stopped watch is never read: its objects would go stale.
	defer s.synced.Store(false)
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		if _, err := s.cache.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("watching override %T: %w", obj, err)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- s.cache.Start(ctx) }()
	if s.cache.WaitForCacheSync(ctx) {
		s.synced.Store(true)
	}
	if err := <-errc; err != nil {
		return fmt.Errorf("watching override sources: %w", err)
	}
	return nil
}

// Get implements client.Reader; it always asks the API server.
func (s *Sources) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return s.direct.Get(ctx, key, obj, opts...)
}

// List implements client.Reader for the override sources: from the watch once it has synced.
// The watch holds labelled ConfigMaps and Secrets only, so the caller's selector must ask for
// them (Resolve's does).
func (s *Sources) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if s.synced.Load() {
		return s.cache.List(ctx, list, opts...)
	}
	return s.direct.List(ctx, list, opts...)
}
