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

// AccountTx is what runs under a global account's account lock (LockAccounts)
// reads and writes, in the lock's transaction.
type AccountTx interface {
	// InstancesPerAccount counts, per binding named, the instances recorded on
	// it (subscription_secret_name), the instance choosing now excepted;
	// bindings without one are absent.
	InstancesPerAccount(ctx context.Context, names []string, exceptInstanceID string) (map[string]int, error)
	// SetInstanceAccount is Store.SetInstanceAccount in the transaction.
	SetInstanceAccount(ctx context.Context, instanceID, binding string, euAccess bool) error
	// OtherInstancesOnAccount counts the instances other than
	// exceptInstanceID recorded on the binding that stay: suspended ones
	// included (their runtimes come back to it), ones being deprovisioned
	// (a deprovisioning that is not a suspension) left out, since each of
	// them releases the account on its own way out.
	OtherInstancesOnAccount(ctx context.Context, binding, exceptInstanceID string) (int, error)
	// OtherInstancesOfTenant counts the global account's other instances on
	// a provider that stay (as OtherInstancesOnAccount), leaving out plans
	// that run on shared accounts: for a claim the provisioning never
	// recorded.
	OtherInstancesOfTenant(ctx context.Context, globalAccountID, provider, exceptInstanceID string, sharedPlanIDs []string) (int, error)
}

// accountTx is the AccountTx of LockAccounts.
type accountTx struct{ tx pgx.Tx }

func (a accountTx) InstancesPerAccount(ctx context.Context, names []string, exceptInstanceID string) (map[string]int, error) {
	rows, _ := a.tx.Query(ctx, `SELECT subscription_secret_name, count(*)::int FROM instances
		WHERE subscription_secret_name = ANY($1::text[]) AND instance_id <> $2 GROUP BY subscription_secret_name`,
		names, exceptInstanceID)
	return collectUsage(rows, "counting instances per hyperscaler account")
}

func (a accountTx) SetInstanceAccount(ctx context.Context, instanceID, binding string, euAccess bool) error {
	if _, err := a.tx.Exec(ctx, `UPDATE instances SET subscription_secret_name = $2, eu_access = $3 WHERE instance_id = $1`,
		instanceID, binding, euAccess); err != nil {
		return fmt.Errorf("recording the hyperscaler account of instance %s: %w", instanceID, err)
	}
	return nil
}

// staying keeps the instances that are not being deprovisioned: none of
// their operations is a deprovisioning other than a suspension (in
// progress, or finished and not yet archived).
const staying = `NOT EXISTS (SELECT 1 FROM operations o WHERE o.instance_id = instances.instance_id
		AND o.type = 'deprovision' AND NOT o.temporary)`

func (a accountTx) OtherInstancesOnAccount(ctx context.Context, binding, exceptInstanceID string) (int, error) {
	var n int
	if err := a.tx.QueryRow(ctx, `SELECT count(*) FROM instances WHERE subscription_secret_name = $1 AND instance_id <> $2
		AND `+staying, binding, exceptInstanceID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting instances on hyperscaler account %s: %w", binding, err)
	}
	return n, nil
}

func (a accountTx) OtherInstancesOfTenant(ctx context.Context, globalAccountID, provider, exceptInstanceID string, sharedPlanIDs []string) (int, error) {
	var n int
	err := a.tx.QueryRow(ctx, `SELECT count(*) FROM instances
		WHERE coalesce(nullif(subscription_global_account_id, ''), global_account_id) = $1 AND provider = $2
		AND instance_id <> $3 AND NOT (plan_id = ANY(coalesce($4::text[], '{}'))) AND `+staying,
		globalAccountID, provider, exceptInstanceID, sharedPlanIDs).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting instances of global account %s: %w", globalAccountID, err)
	}
	return n, nil
}

// LockAccounts runs fn in a transaction holding the account lock of a global
// account (the tenant of its hyperscaler accounts, Instance.PoolTenant), so
// that in every replica the claims and releases of one global account's
// accounts happen one after the other: a provisioning's claim and the
// recording of the account on its instance, a deprovisioning's check that
// no other instance stays on the account and its dirty mark. Each sees what
// every earlier one wrote, so a release never marks an account a
// provisioning just took, and of several instances deprovisioned at once
// the last one out releases it.
//
// The lock is PostgreSQL's transaction-scoped advisory lock
// pg_advisory_xact_lock(hashtextextended('keb-account:' || globalAccount, 0)):
// PostgreSQL releases it at commit or rollback, also when the replica dies
// (its connection ends). Two global accounts whose keys hash alike share a
// lock, which only serialises them. fn talks to the API server while the
// lock and one pool connection are held: keep it short.
func (s *Store) LockAccounts(ctx context.Context, globalAccount string, fn func(ctx context.Context, tx AccountTx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('keb-account:' || $1, 0))`, globalAccount); err != nil {
			return fmt.Errorf("locking the hyperscaler accounts of global account %s: %w", globalAccount, err)
		}
		return fn(ctx, accountTx{tx: tx})
	})
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
