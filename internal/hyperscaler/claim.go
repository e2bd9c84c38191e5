package hyperscaler

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxClaimRounds bounds how often Claim re-lists the pool after losing every candidate to
// concurrent claims. Each round either finds the tenant's account, claims one, or loses all
// candidates to others, so running out means heavy contention: the caller retries later.
const maxClaimRounds = 10

// Claim returns the tenant's account of pool, claiming one if the tenant has none.
//
// The tenant's account is its object of that pool that is neither shared nor dirty. Without one,
// Claim labels an unassigned one (no tenantName, not shared, not dirty) tenantName=<tenant>,
// trying candidates by name. The label is written with a patch carrying the resourceVersion
// read, so when two callers race for one account the API server rejects the second (409) and that
// caller moves on to the next candidate. Two concurrent claims for the same tenant may each
// label an account; after labelling, Claim re-lists the tenant's accounts and, if there are several,
// keeps the one with the lowest name and releases the others, so both callers return the same
// account. The lowest name is the right pick because every caller tries candidates in the same
// (name) order, so the first account a tenant gets, which an early caller may already have
// returned, is lower than any it gets later in the race. (Only a lower-named account joining the
// pool, or being released back to it, in the middle of such a race could make two calls
// disagree.)
//
// ErrNoAccount (wrapped) means no unassigned account of that pool is left.
func (p *AccountPool) Claim(ctx context.Context, pool Pool, tenant string) (Account, error) {
	if pool.Type == "" || tenant == "" {
		return Account{}, fmt.Errorf("claiming a hyperscaler account needs a type and a tenant, got type %q and tenant %q", pool.Type, tenant)
	}
	if name, ok := p.knownClaim(ctx, pool, tenant); ok {
		return Account{Name: name}, nil
	}
	var lastLost error
	for range maxClaimRounds {
		// Also the check after a successful claim: it settles duplicates left by a concurrent
		// claim for the same tenant.
		if name, found, err := p.tenantAccount(ctx, pool, tenant); err != nil || found {
			if found {
				p.claims.Store(claimKey{pool, tenant}, name)
			}
			return Account{Name: name}, err
		}
		candidates, err := p.accounts(ctx, pool, func(l accountLabels) bool {
			return l.tenant == "" && !l.shared && !l.dirty
		})
		if err != nil {
			return Account{}, fmt.Errorf("claiming a %s account for tenant %s: %w", pool, tenant, err)
		}
		if len(candidates) == 0 {
			// A concurrent claim for the same tenant may have taken the last free account between
			// our two lists: that account is ours as well.
			if name, found, err := p.tenantAccount(ctx, pool, tenant); err != nil || found {
				return Account{Name: name}, err
			}
			return Account{}, fmt.Errorf("no unassigned account (%s) in %s for tenant %s: %w", pool, p.namespace, tenant, ErrNoAccount)
		}
		if lastLost, err = p.claimFirstFree(ctx, candidates, tenant); err != nil {
			return Account{}, fmt.Errorf("claiming a %s account for tenant %s: %w", pool, tenant, err)
		}
	}
	return Account{}, fmt.Errorf("claiming a %s account for tenant %s in %s: every candidate was taken concurrently, %d times: %w",
		pool, tenant, p.namespace, maxClaimRounds, lastLost)
}

// claimKey is a tenant's claim of a hyperscaler type.
type claimKey struct {
	pool   Pool
	tenant string
}

// knownClaim returns the tenant's account this pool found before, if a read of that one object
// shows it still the tenant's: a tenant's every later provisioning then costs one Get instead of
// listing the pool in both label spellings. An account since released, marked dirty or shared, or
// deleted is forgotten, and Claim looks afresh. What was found is the lowest-named of the tenant's
// accounts once duplicates were settled; a concurrent claim adds none while it stays the tenant's,
// since claims label an account only for a tenant that has none.
func (p *AccountPool) knownClaim(ctx context.Context, pool Pool, tenant string) (string, bool) {
	key := claimKey{pool, tenant}
	v, ok := p.claims.Load(key)
	if !ok {
		return "", false
	}
	name := v.(string)
	o, err := p.get(ctx, name)
	if err != nil {
		p.claims.Delete(key)
		return "", false
	}
	if l := poolLabels(o.Labels); l.hyperscalerType != pool.Type || l.euAccess != pool.EUAccess || !ownedBy(tenant)(l) {
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
		o := &candidates[i].obj
		// In the spelling of the object's type label, so tools of either convention see it. o
		// carries the resourceVersion listed: the optimistic lock that makes a claim exclusive.
		err := p.relabel(ctx, o, func(l, _ map[string]string) { l[candidates[i].labels.tenantKey] = tenant })
		switch {
		case err == nil:
			return nil, nil
		case isLost(err):
			lost = err
		default:
			return nil, fmt.Errorf("labelling %s %s/%s: %w", p.kind, o.Namespace, o.Name, err)
		}
	}
	return lost, nil
}

// isLost tells a candidate lost to a concurrent writer (409 Conflict) or to deletion (404).
func isLost(err error) bool { return apierrors.IsConflict(err) || apierrors.IsNotFound(err) }

// tenantAccount returns the name of the tenant's live (neither shared nor dirty) account of pool.
// If the tenant holds several, it keeps the lowest name and releases the others, so that every
// caller settles on the same one.
func (p *AccountPool) tenantAccount(ctx context.Context, pool Pool, tenant string) (string, bool, error) {
	owned, err := p.accounts(ctx, pool, ownedBy(tenant))
	if err != nil {
		return "", false, fmt.Errorf("finding the account (%s) of tenant %s: %w", pool, tenant, err)
	}
	if len(owned) == 0 {
		return "", false, nil
	}
	extras := make([]string, 0, len(owned)-1)
	for _, extra := range owned[1:] {
		extras = append(extras, extra.obj.Name)
	}
	// An extra account instances are recorded on is kept (a global account that held several
	// accounts while allowlisted for it): releasing it would hand its clusters' account to
	// another tenant.
	used := map[string]int{}
	if len(extras) > 0 {
		if used, err = p.usage(ctx, extras); err != nil {
			return "", false, fmt.Errorf("counting the instances on the accounts (%s) of tenant %s: %w", pool, tenant, err)
		}
	}
	for _, extra := range owned[1:] {
		if used[extra.obj.Name] > 0 {
			continue
		}
		if err := p.release(ctx, extra.obj.Name, tenant); err != nil {
			return "", false, fmt.Errorf("releasing duplicate account (%s) of tenant %s: %w", pool, tenant, err)
		}
	}
	return owned[0].obj.Name, true, nil
}

// ownedBy keeps the tenant's live (neither shared nor dirty) accounts.
func ownedBy(tenant string) func(accountLabels) bool {
	return func(l accountLabels) bool { return l.tenant == tenant && !l.shared && !l.dirty }
}

// release removes the tenant label from the account, returning it to the pool, unless it no
// longer belongs to tenant or became dirty meanwhile (another caller already acted on it).
func (p *AccountPool) release(ctx context.Context, name, tenant string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := p.get(ctx, name)
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		if l := poolLabels(o.Labels); l.tenant != tenant || l.dirty {
			return nil
		}
		return p.relabel(ctx, o, func(l, _ map[string]string) {
			delete(l, LabelTenantName)
			delete(l, LabelTenantNameUpstream)
		})
	})
}
