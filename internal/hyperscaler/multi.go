package hyperscaler

import (
	"context"
	"fmt"
)

// TenantAccounts returns the names of the tenant's live (neither shared nor dirty) accounts of
// pool, sorted: the accounts a multi-account global account chooses among.
func (p *AccountPool) TenantAccounts(ctx context.Context, pool Pool, tenant string) ([]string, error) {
	owned, err := p.accounts(ctx, pool, ownedBy(tenant))
	if err != nil {
		return nil, fmt.Errorf("listing the accounts (%s) of tenant %s: %w", pool, tenant, err)
	}
	names := make([]string, len(owned))
	for i := range owned {
		names[i] = owned[i].obj.Name
	}
	return names, nil
}

// ClaimNew labels one more unassigned account of pool for tenant, whatever the tenant holds
// already: a multi-account global account's next account. Unlike Claim it settles no duplicates,
// so callers run it one at a time per tenant (keb holds the global account's account lock,
// storage.LockAccounts). ErrNoAccount (wrapped) when none is left.
func (p *AccountPool) ClaimNew(ctx context.Context, pool Pool, tenant string) (Account, error) {
	if pool.Type == "" || tenant == "" {
		return Account{}, fmt.Errorf("claiming a hyperscaler account needs a type and a tenant, got type %q and tenant %q", pool.Type, tenant)
	}
	var lastLost error
	for range maxClaimRounds {
		candidates, err := p.accounts(ctx, pool, func(l accountLabels) bool { return l.tenant == "" && !l.shared && !l.dirty })
		if err != nil {
			return Account{}, fmt.Errorf("claiming a %s account for tenant %s: %w", pool, tenant, err)
		}
		if len(candidates) == 0 {
			return Account{}, fmt.Errorf("no unassigned account (%s) in %s for tenant %s: %w", pool, p.namespace, tenant, ErrNoAccount)
		}
		for i := range candidates {
			o := &candidates[i].obj
			err := p.relabel(ctx, o, func(l, _ map[string]string) { l[candidates[i].labels.tenantKey] = tenant })
			if err == nil {
				return Account{Name: o.Name}, nil
			}
			if lost := isLost(err); !lost {
				return Account{}, fmt.Errorf("labelling %s %s/%s: %w", p.kind, o.Namespace, o.Name, err)
			}
			lastLost = err
		}
	}
	return Account{}, fmt.Errorf("claiming a new %s account for tenant %s in %s: every candidate was taken concurrently, %d times: %w",
		pool, tenant, p.namespace, maxClaimRounds, lastLost)
}
