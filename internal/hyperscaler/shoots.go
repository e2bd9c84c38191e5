package hyperscaler

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/gardener/core"
)

// ShootsUsing returns the names of the project's Shoots that reference the binding name
// (spec.credentialsBindingName or spec.secretBindingName), sorted: an account is marked dirty
// only when none is left.
func (p *AccountPool) ShootsUsing(ctx context.Context, name string) ([]string, error) {
	usage, err := p.ShootUsage(ctx)
	if err != nil {
		return nil, err
	}
	return usage[name], nil
}

// ShootUsage returns, per binding name, the project's Shoots referencing it (names sorted).
func (p *AccountPool) ShootUsage(ctx context.Context) (map[string][]string, error) {
	list := &core.ShootList{}
	err := p.c.List(ctx, list, client.InNamespace(p.namespace))
	if meta.IsNoMatchError(err) {
		// No Gardener API behind the pool (a pool of labelled Secrets in a plain cluster): there
		// are no Shoots to ask; keb's own records decide alone.
		return map[string][]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the Shoots of %s: %w", p.namespace, err)
	}
	out := map[string][]string{}
	for i := range list.Items {
		if b := list.Items[i].BindingName(); b != "" {
			out[b] = append(out[b], list.Items[i].Name)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out, nil
}

// ShootExists reports whether the project has a Shoot named name.
func (p *AccountPool) ShootExists(ctx context.Context, name string) (bool, error) {
	err := p.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, &core.Shoot{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading Shoot %s/%s: %w", p.namespace, name, err)
	}
	return true, nil
}
