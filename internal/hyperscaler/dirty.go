package hyperscaler

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkDirty labels the tenant's account of pool dirty: "true", once its runtimes are gone, so that
// it is cleaned up and never handed out again; the tenant's next Claim gets a fresh one. The
// tenant label stays, telling the cleanup whose account it was. It is idempotent: a tenant
// without such an account, or whose account is already dirty, leaves nothing to do. Shared and
// internal accounts are never marked. Callers make sure no cluster uses the account any more
// (see ShootsUsing).
func (p *AccountPool) MarkDirty(ctx context.Context, pool Pool, tenant string) error {
	if pool.Type == "" || tenant == "" {
		return fmt.Errorf("marking a hyperscaler account dirty needs a type and a tenant, got type %q and tenant %q", pool.Type, tenant)
	}
	owned, err := p.accounts(ctx, pool, ownedBy(tenant))
	if err != nil {
		return fmt.Errorf("marking the account (%s) of tenant %s dirty: %w", pool, tenant, err)
	}
	// Normally one; mark every one, as none of them may be handed out again.
	for _, a := range owned {
		if err := p.MarkDirtyByName(ctx, a.obj.Name, tenant); err != nil {
			return err
		}
	}
	return nil
}

// MarkDirtyByName labels one account of tenant dirty, re-reading it on a conflict; it leaves the
// account alone if it was released or re-assigned meanwhile, or is shared or internal.
func (p *AccountPool) MarkDirtyByName(ctx context.Context, name, tenant string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := p.get(ctx, name)
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		if l := poolLabels(o.Labels); l.tenant != tenant || l.dirty || l.shared || l.internal {
			return nil
		}
		err = p.relabel(ctx, o, func(l, a map[string]string) {
			l[LabelDirty] = labelTrue
			a[AnnotationDirtySince] = time.Now().UTC().Format(time.RFC3339)
		})
		if err != nil {
			return fmt.Errorf("labelling %s %s/%s dirty: %w", p.kind, o.Namespace, o.Name, err)
		}
		return nil
	})
}
