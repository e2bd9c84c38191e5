package hyperscaler

import (
	"context"
	"fmt"
)

// ClaimShared returns the least used shared account of pool (ties: lowest name), as counted by
// the pool's UsageCounter. Shared accounts are never labelled with a tenant, so this writes
// nothing: calling it again may pick another account once usage changes, and the caller persists
// its choice. ErrNoAccount (wrapped) means there is no shared account in that pool.
func (p *AccountPool) ClaimShared(ctx context.Context, pool Pool) (Account, error) {
	if pool.Type == "" {
		return Account{}, fmt.Errorf("claiming a shared hyperscaler account needs a type")
	}
	shared, err := p.accounts(ctx, pool, func(l accountLabels) bool { return l.shared && !l.dirty })
	if err != nil {
		return Account{}, fmt.Errorf("claiming a shared account (%s): %w", pool, err)
	}
	if len(shared) == 0 {
		return Account{}, fmt.Errorf("no shared account (%s,shared=true) in %s: %w", pool, p.namespace, ErrNoAccount)
	}
	names := make([]string, len(shared))
	for i := range shared {
		names[i] = shared[i].obj.Name
	}
	// One count for all of them: a count per account multiplied the cost of a claim by the
	// size of the shared pool.
	usage, err := p.usage(ctx, names)
	if err != nil {
		return Account{}, fmt.Errorf("counting runtimes on the shared accounts (%s): %w", pool, err)
	}
	best, bestUsage := "", 0
	for _, name := range names {
		// Strictly less: on a tie the earlier (lower) name stays (names are sorted).
		if n := usage[name]; best == "" || n < bestUsage {
			best, bestUsage = name, n
		}
	}
	return Account{Name: best, Shared: true}, nil
}
