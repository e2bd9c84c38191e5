package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AccountUsage counts, per hyperscaler account (binding name), the live
// instances holding it now: the binding each instance records
// (subscription_secret_name, set when its provisioning or a plan change
// chose the account, kept while suspended). A trial moved to aws counts on
// its aws account only, not on the shared one its provisioning claimed.
// Accounts nobody holds are absent. One statement, on
// instances_subscription_secret_name_idx however many instances the
// database holds: `keb pool`, `keb pool release` and every shared-pool claim
// (ClaimShared spreads trials by it) ask it.
func (s *Store) AccountUsage(ctx context.Context, names []string) (map[string]int, error) {
	rows, _ := s.pool.Query(ctx, accountUsageQuery, names)
	return collectUsage(rows, "counting instances per hyperscaler account")
}

// accountUsageQuery is AccountUsage's statement.
const accountUsageQuery = `SELECT subscription_secret_name, count(*)::int FROM instances
	WHERE subscription_secret_name = ANY($1::text[]) GROUP BY subscription_secret_name`

func collectUsage(rows pgx.Rows, what string) (map[string]int, error) {
	usage := map[string]int{}
	var name string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		usage[name] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return usage, nil
}

// SetInstanceAccount records the hyperscaler account (binding name) an
// instance's runtime is created with, and whether it is an EU-access one.
func (s *Store) SetInstanceAccount(ctx context.Context, instanceID, binding string, euAccess bool) error {
	if _, err := s.pool.Exec(ctx, `UPDATE instances SET subscription_secret_name = $2, eu_access = $3 WHERE instance_id = $1`,
		instanceID, binding, euAccess); err != nil {
		return fmt.Errorf("recording the hyperscaler account of instance %s: %w", instanceID, err)
	}
	return nil
}

// AccountTx is what a locked account choice reads and writes in its
// transaction (ClaimAccountLocked).
type AccountTx struct{ tx pgx.Tx }

// InstancesPerAccount counts, per binding named, the instances recorded on it
// (subscription_secret_name), the instance choosing now excepted; bindings
// without one are absent.
func (a AccountTx) InstancesPerAccount(ctx context.Context, names []string, exceptInstanceID string) (map[string]int, error) {
	rows, _ := a.tx.Query(ctx, `SELECT subscription_secret_name, count(*)::int FROM instances
		WHERE subscription_secret_name = ANY($1::text[]) AND instance_id <> $2 GROUP BY subscription_secret_name`,
		names, exceptInstanceID)
	return collectUsage(rows, "counting instances per hyperscaler account")
}

// SetInstanceAccount is Store.SetInstanceAccount in the transaction.
func (a AccountTx) SetInstanceAccount(ctx context.Context, instanceID, binding string, euAccess bool) error {
	if _, err := a.tx.Exec(ctx, `UPDATE instances SET subscription_secret_name = $2, eu_access = $3 WHERE instance_id = $1`,
		instanceID, binding, euAccess); err != nil {
		return fmt.Errorf("recording the hyperscaler account of instance %s: %w", instanceID, err)
	}
	return nil
}

// ClaimAccountLocked runs choose in a transaction holding a lock of key (a
// global account and pool), so that the account choices of one global
// account's pool, in any replica, happen one after the other: each sees the
// instances every earlier one recorded. The lock is released at commit.
func (s *Store) ClaimAccountLocked(ctx context.Context, key string, choose func(ctx context.Context, tx AccountTx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('keb-account:' || $1, 0))`, key); err != nil {
			return fmt.Errorf("locking the accounts of %s: %w", key, err)
		}
		return choose(ctx, AccountTx{tx: tx})
	})
}

// OtherInstancesOnAccount counts the instances other than exceptInstanceID
// recorded on the binding (subscription_secret_name), suspended ones
// included: their runtimes come back to it.
func (s *Store) OtherInstancesOnAccount(ctx context.Context, binding, exceptInstanceID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM instances WHERE subscription_secret_name = $1 AND instance_id <> $2`,
		binding, exceptInstanceID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting instances on hyperscaler account %s: %w", binding, err)
	}
	return n, nil
}

// InstanceAccount returns the binding recorded for an instance ("" when none
// was) and whether it is an EU-access one.
func (s *Store) InstanceAccount(ctx context.Context, instanceID string) (string, bool, error) {
	var name *string
	var eu bool
	err := s.pool.QueryRow(ctx, `SELECT subscription_secret_name, eu_access FROM instances WHERE instance_id = $1`, instanceID).Scan(&name, &eu)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading the hyperscaler account of instance %s: %w", instanceID, err)
	}
	if name == nil {
		return "", eu, nil
	}
	return *name, eu, nil
}
