package hyperscaler

import (
	"context"
	"fmt"
	"slices"
)

// ClaimShared returns the least used shared Secret of hyperscalerType (ties: lowest name), as
// counted by the pool's UsageCounter. Shared Secrets are never labelled with a tenant, so this
// writes nothing: calling it again may pick another Secret once usage changes, and the caller
// persists its choice. ErrNoAccount (wrapped) means there is no shared Secret of that type.
func (p *Pool) ClaimShared(ctx context.Context, hyperscalerType string) (Account, error) {
	if hyperscalerType == "" {
		return Account{}, fmt.Errorf("claiming a shared hyperscaler account needs a type")
	}
	shared, err := p.list(ctx,
		is(LabelHyperscalerType, hyperscalerType),
		is(LabelShared, labelTrue),
		isNot(LabelDirty, labelTrue))
	if err != nil {
		return Account{}, fmt.Errorf("claiming a shared %s account: %w", hyperscalerType, err)
	}
	if len(shared) == 0 {
		return Account{}, fmt.Errorf("no shared %s account in %s: %w", hyperscalerType, p.namespace, ErrNoAccount)
	}
	slices.SortFunc(shared, byName)
	best, bestUsage := "", 0
	for _, s := range shared {
		n, err := p.usage(ctx, s.Name)
		if err != nil {
			return Account{}, fmt.Errorf("counting runtimes on shared secret %s: %w", s.Name, err)
		}
		// Strictly less: on a tie the earlier (lower) name stays.
		if best == "" || n < bestUsage {
			best, bestUsage = s.Name, n
		}
	}
	return Account{SecretName: best, Shared: true}, nil
}
