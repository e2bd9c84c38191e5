package hyperscaler

import (
	"context"
	"fmt"
)

// ClaimShared returns the least used shared Secret of hyperscalerType (ties: lowest name), as
// counted by the pool's UsageCounter. Shared Secrets are never labelled with a tenant, so this
// writes nothing: calling it again may pick another Secret once usage changes, and the caller
// persists its choice. ErrNoAccount (wrapped) means there is no shared Secret of that type.
func (p *AccountPool) ClaimShared(ctx context.Context, hyperscalerType string) (Account, error) {
	if hyperscalerType == "" {
		return Account{}, fmt.Errorf("claiming a shared hyperscaler account needs a type")
	}
	shared, err := p.accounts(ctx, hyperscalerType, func(l accountLabels) bool { return l.shared && !l.dirty })
	if err != nil {
		return Account{}, fmt.Errorf("claiming a shared %s account: %w", hyperscalerType, err)
	}
	if len(shared) == 0 {
		return Account{}, fmt.Errorf("no shared %s account in %s: %w", hyperscalerType, p.namespace, ErrNoAccount)
	}
	best, bestUsage := "", 0
	for _, a := range shared {
		s := a.secret
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
