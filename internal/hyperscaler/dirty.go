package hyperscaler

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkDirty labels the tenant's Secret of hyperscalerType dirty: "true", once its runtime is gone,
// so that it is cleaned up and never handed out again; the tenant's next Claim gets a fresh one.
// The tenant-name label stays, telling the cleanup whose account it was. It is idempotent: a
// tenant without such a Secret, or whose Secret is already dirty, leaves nothing to do. Shared
// Secrets are never marked.
func (p *AccountPool) MarkDirty(ctx context.Context, hyperscalerType, tenant string) error {
	if hyperscalerType == "" || tenant == "" {
		return fmt.Errorf("marking a hyperscaler account dirty needs a type and a tenant, got type %q and tenant %q", hyperscalerType, tenant)
	}
	owned, err := p.accounts(ctx, hyperscalerType, ownedBy(tenant))
	if err != nil {
		return fmt.Errorf("marking the %s account of tenant %s dirty: %w", hyperscalerType, tenant, err)
	}
	// Normally one; mark every one, as none of them may be handed out again.
	for _, s := range owned {
		if err := p.markDirty(ctx, s.secret.Name, tenant); err != nil {
			return fmt.Errorf("marking the %s account of tenant %s dirty: %w", hyperscalerType, tenant, err)
		}
	}
	return nil
}

// markDirty labels one Secret dirty, re-reading it on a conflict; it leaves the Secret alone if it
// was released or re-assigned meanwhile.
func (p *AccountPool) markDirty(ctx context.Context, name, tenant string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &corev1.Secret{}
		if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, s); err != nil {
			return client.IgnoreNotFound(err)
		}
		if l := poolLabels(s.Labels); l.tenant != tenant || l.dirty {
			return nil
		}
		s.Labels[LabelDirty] = labelTrue
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[AnnotationDirtySince] = time.Now().UTC().Format(time.RFC3339)
		if err := p.c.Update(ctx, s); err != nil {
			return fmt.Errorf("labelling secret %s/%s dirty: %w", s.Namespace, s.Name, err)
		}
		return nil
	})
}
