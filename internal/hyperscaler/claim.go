package hyperscaler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxClaimRounds bounds how often Claim re-lists the pool after losing every candidate to
// concurrent claims. Each round either finds the tenant's Secret, claims one, or loses all
// candidates to others, so running out means heavy contention: the caller retries later.
const maxClaimRounds = 10

// Claim returns the tenant's account of hyperscalerType, claiming one if the tenant has none.
//
// The tenant's account is its Secret of that type that is neither shared nor dirty. Without one,
// Claim labels an unassigned Secret (no tenant-name, not shared, not dirty) tenant-name=<tenant>,
// trying candidates by name. The label is written with an Update carrying the resourceVersion
// read, so when two callers race for one Secret the API server rejects the second (409) and that
// caller moves on to the next candidate. Two concurrent claims for the same tenant may each
// label a Secret; after labelling, Claim re-lists the tenant's Secrets and, if there are several,
// keeps the one with the lowest name and releases the others, so both callers return the same
// account. The lowest name is the right pick because every caller tries candidates in the same
// (name) order, so the first Secret a tenant gets, which an early caller may already have
// returned, is lower than any it gets later in the race. (Only a lower-named Secret joining the
// pool, or being released back to it, in the middle of such a race could make two calls
// disagree.)
//
// ErrNoAccount (wrapped) means no unassigned Secret of that type is left.
func (p *AccountPool) Claim(ctx context.Context, hyperscalerType, tenant string) (Account, error) {
	if hyperscalerType == "" || tenant == "" {
		return Account{}, fmt.Errorf("claiming a hyperscaler account needs a type and a tenant, got type %q and tenant %q", hyperscalerType, tenant)
	}
	if name, ok := p.knownClaim(ctx, hyperscalerType, tenant); ok {
		return Account{SecretName: name}, nil
	}
	var lastLost error
	for range maxClaimRounds {
		// Also the check after a successful claim: it settles duplicates left by a concurrent
		// claim for the same tenant.
		if name, found, err := p.tenantSecret(ctx, hyperscalerType, tenant); err != nil || found {
			if found {
				p.claims.Store(claimKey{hyperscalerType, tenant}, name)
			}
			return Account{SecretName: name}, err
		}
		candidates, err := p.accounts(ctx, hyperscalerType, func(l accountLabels) bool {
			return l.tenant == "" && !l.shared && !l.dirty
		})
		if err != nil {
			return Account{}, fmt.Errorf("claiming a %s account for tenant %s: %w", hyperscalerType, tenant, err)
		}
		if len(candidates) == 0 {
			// A concurrent claim for the same tenant may have taken the last free Secret between
			// our two lists: that Secret is ours as well.
			if name, found, err := p.tenantSecret(ctx, hyperscalerType, tenant); err != nil || found {
				return Account{SecretName: name}, err
			}
			return Account{}, fmt.Errorf("no unassigned %s account in %s for tenant %s: %w", hyperscalerType, p.namespace, tenant, ErrNoAccount)
		}
		if lastLost, err = p.claimFirstFree(ctx, candidates, tenant); err != nil {
			return Account{}, fmt.Errorf("claiming a %s account for tenant %s: %w", hyperscalerType, tenant, err)
		}
	}
	return Account{}, fmt.Errorf("claiming a %s account for tenant %s in %s: every candidate was taken concurrently, %d times: %w",
		hyperscalerType, tenant, p.namespace, maxClaimRounds, lastLost)
}

// claimKey is a tenant's claim of a hyperscaler type.
type claimKey struct{ hyperscalerType, tenant string }

// knownClaim returns the tenant's Secret this pool found before, if a read of that one Secret
// shows it still the tenant's: a tenant's every later provisioning then costs one Get instead of
// listing the pool in both label spellings. A Secret since released, marked dirty or shared, or
// deleted is forgotten, and Claim looks afresh. What was found is the lowest-named of the tenant's
// Secrets once duplicates were settled; a concurrent claim adds none while it stays the tenant's,
// since claims label a Secret only for a tenant that has none.
func (p *AccountPool) knownClaim(ctx context.Context, hyperscalerType, tenant string) (string, bool) {
	key := claimKey{hyperscalerType, tenant}
	v, ok := p.claims.Load(key)
	if !ok {
		return "", false
	}
	name := v.(string)
	s := &corev1.Secret{}
	if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, s); err != nil {
		p.claims.Delete(key)
		return "", false
	}
	if l := poolLabels(s.Labels); l.hyperscalerType != hyperscalerType || l.euAccess || !ownedBy(tenant)(l) {
		p.claims.Delete(key)
		return "", false
	}
	return name, true
}

// claimFirstFree labels the first candidate it can for tenant. Losing a candidate to a concurrent
// writer (409 Conflict) or to deletion (404) is not an error: it returns that loss after trying
// all of them, and nil once one is labelled.
func (p *AccountPool) claimFirstFree(ctx context.Context, candidates []account, tenant string) (lost, err error) {
	for i := range candidates {
		s := &candidates[i].secret
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		// In the spelling of the Secret's type label, so tools of either convention see it.
		s.Labels[candidates[i].labels.tenantKey] = tenant
		// s carries the resourceVersion listed: this is the optimistic lock that makes a claim
		// exclusive.
		err := p.c.Update(ctx, s)
		switch {
		case err == nil:
			return nil, nil
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			lost = err
		default:
			return nil, fmt.Errorf("labelling secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	return lost, nil
}

// tenantSecret returns the name of the tenant's live (neither shared nor dirty) Secret of
// hyperscalerType. If the tenant holds several, it keeps the lowest name and releases the others,
// so that every caller settles on the same one.
func (p *AccountPool) tenantSecret(ctx context.Context, hyperscalerType, tenant string) (string, bool, error) {
	owned, err := p.accounts(ctx, hyperscalerType, ownedBy(tenant))
	if err != nil {
		return "", false, fmt.Errorf("finding the %s account of tenant %s: %w", hyperscalerType, tenant, err)
	}
	if len(owned) == 0 {
		return "", false, nil
	}
	for _, extra := range owned[1:] {
		if err := p.release(ctx, extra.secret.Name, tenant); err != nil {
			return "", false, fmt.Errorf("releasing duplicate %s account of tenant %s: %w", hyperscalerType, tenant, err)
		}
	}
	return owned[0].secret.Name, true, nil
}

// ownedBy keeps the tenant's live (neither shared nor dirty) Secrets.
func ownedBy(tenant string) func(accountLabels) bool {
	return func(l accountLabels) bool { return l.tenant == tenant && !l.shared && !l.dirty }
}

// release removes the tenant-name label from the Secret, returning it to the pool, unless it no
// longer belongs to tenant or became dirty meanwhile (another caller already acted on it).
func (p *AccountPool) release(ctx context.Context, name, tenant string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &corev1.Secret{}
		if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, s); err != nil {
			return client.IgnoreNotFound(err)
		}
		if l := poolLabels(s.Labels); l.tenant != tenant || l.dirty {
			return nil
		}
		delete(s.Labels, LabelTenantName)
		delete(s.Labels, LabelTenantNameUpstream)
		return p.c.Update(ctx, s)
	})
}
