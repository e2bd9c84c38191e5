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
	names := make([]string, len(shared))
	for i := range shared {
		names[i] = shared[i].secret.Name
	}
	// One count for all of them: a count per Secret multiplied the cost of a claim by the
	// size of the shared pool.
	usage, err := p.usage(ctx, names)
	if err != nil {
		return Account{}, fmt.Errorf("counting runtimes on the shared %s secrets: %w", hyperscalerType, err)
	}
	best, bestUsage := "", 0
	for _, name := range names {
		// Strictly less: on a tie the earlier (lower) name stays (names are sorted).
		if n := usage[name]; best == "" || n < bestUsage {
			best, bestUsage = name, n
		}
	}
	return Account{SecretName: best, Shared: true}, nil
}
