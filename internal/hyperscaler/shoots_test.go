package hyperscaler

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A pool of labelled Secrets in a cluster without Gardener's API has no Shoots to ask about: the
// release then goes by keb's own records instead of failing forever.
func TestNoShootKindMeansNoShoots(t *testing.T) {
	t.Parallel()
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "core.gardener.cloud", Kind: "Shoot"}}
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return noMatch },
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return noMatch
		},
	}).Build()
	p := NewAccountPool(c, KindSecret, "garden-test", nil)
	if shoots, err := p.ShootsUsing(t.Context(), "az-1"); err != nil || len(shoots) != 0 {
		t.Errorf("ShootsUsing = %v, %v; want none", shoots, err)
	}
	if exists, err := p.ShootExists(t.Context(), "c-1"); err != nil || exists {
		t.Errorf("ShootExists = %v, %v; want false", exists, err)
	}
}
