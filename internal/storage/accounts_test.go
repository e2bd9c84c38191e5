package storage_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// AccountUsage counts each live instance once, on the account it holds
// now: a trial moved to aws counts on its aws account, not on the shared
// one its provisioning claimed (issue 29: `keb pool` counted it twice).
func TestAccountUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	// Provisioned on az-1, provisioning (claimed) on az-1, suspended on az-2,
	// archived on az-3, and a trial provisioned on sh-1 then moved to aws-1.
	f.provision("done", "ga-1", "azure", "op-done")
	f.provision("claiming", "ga-1", "azure", "op-claiming")
	f.provision("suspended", "ga-2", "azure", "op-susp")
	f.exec(`UPDATE instances SET state = 'suspended' WHERE instance_id = 'suspended'`)
	f.provision("gone", "ga-3", "azure", "op-gone")
	f.provision("moved", "ga-4", "trial", "op-moved")
	for id, binding := range map[string]string{"done": "az-1", "claiming": "az-1", "suspended": "az-2", "gone": "az-3", "moved": "sh-1"} {
		if err := f.store.SetInstanceAccount(f.ctx, id, binding, false); err != nil {
			t.Fatal(err)
		}
	}
	f.exec(`DELETE FROM instances WHERE instance_id = 'gone'`)
	// The move: the provisioning's claim stays in its operation and resolved
	// parameters, the instance records its new account.
	f.exec(`UPDATE operations SET state = 'succeeded', data = '{"hyperscalerSecret":"sh-1"}' WHERE operation_id = 'op-moved'`)
	f.exec(`UPDATE instances SET resolved_parameters = '{"targetSecret":"sh-1"}' WHERE instance_id = 'moved'`)
	if err := f.store.SetInstanceAccount(f.ctx, "moved", "aws-1", false); err != nil {
		t.Fatal(err)
	}

	usage, err := f.store.AccountUsage(f.ctx, []string{"az-1", "az-2", "az-3", "az-4", "sh-1", "aws-1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"az-1": 2, "az-2": 1, "aws-1": 1}; !maps.Equal(usage, want) {
		t.Fatalf("usage %v; want %v (each live instance once, on the account it holds now)", usage, want)
	}
}

// AccountUsage reads the instances' account index, not the table, among
// 10,000 instances: every trial provisioning asks it.
func TestAccountUsagePlanUsesIndex(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	for _, sql := range []string{
		`INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id, user_id, service_id, plan_id,
			plan_name, platform_region, provider, provider_region, state, subscription_secret_name)
		SELECT 'inst-'||g, 'rt-'||g, 'ga-'||g, 'sa-'||g, 'u', 'svc', 'p', 'azure', 'cf-eu10', 'azure', 'westeurope',
			'succeeded', CASE WHEN g % 10 = 0 THEN 'az-'||(g % 300) END FROM generate_series(1, 10000) g`,
		`ANALYZE instances`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	rows, _ := pool.Query(ctx, "EXPLAIN (COSTS OFF) "+storage.AccountUsageQuery, []string{"az-10", "az-20", "shared-1"})
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "instances_subscription_secret_name_idx") {
		t.Errorf("AccountUsage's plan scans more than the account index:\n%s", plan)
	}
}
