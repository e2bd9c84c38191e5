package storage_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestCensusReadsNoWholeTable EXPLAINs the metrics census's statements over
// 5,000 instances, 50 of them with an operation running: none reads
// instances or operations (they sum the counts the writes keep, migration
// 00023), so a refresh costs what the number of plans, states and
// operation types does, not the fleet or its running operations. Sequential
// scans are disabled so that a read of either table would show whatever
// this small table's costs.
func TestCensusReadsNoWholeTable(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	for _, sql := range []string{
		`INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id, user_id, service_id, plan_id,
			plan_name, platform_region, provider, provider_region, created_at, state, shoot_name, kyma_state)
		SELECT 'inst-'||g, 'rt-'||g, 'ga-'||(g % 500), 'sa-'||g, 'u', 'svc', 'p-'||(g % 4), 'azure', 'cf-eu10', 'azure',
			'westeurope', now() - g * interval '1 minute', CASE WHEN g % 100 = 0 THEN 'provisioning' ELSE 'succeeded' END,
			'c-'||g, CASE WHEN g % 7 = 0 THEN 'Error' ELSE 'Ready' END
		FROM generate_series(1, 5000) g`,
		`INSERT INTO operations (operation_id, instance_id, type, state, deadline, data, created_at)
		SELECT 'op-'||g, 'inst-'||g, 'provision', CASE WHEN g % 100 = 0 THEN 'in progress' ELSE 'succeeded' END, now(),
			'{}', now() - g * interval '1 minute' FROM generate_series(1, 5000) g`,
		`VACUUM (ANALYZE) instances, operations`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	reads := regexp.MustCompile(`(Seq Scan|Index Only Scan|Index Scan|Bitmap Heap Scan)(?: Backward)?(?: using \w+)? on (instances|operations)\b`)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		for _, sql := range storage.CensusSQL {
			rows, _ := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+sql)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			plan := strings.Join(lines, "\n")
			t.Logf("%s\n%s", sql, plan)
			if m := reads.FindString(plan); m != "" {
				t.Errorf("%s reads the fleet's rows (%s):\n%s", sql, m, plan)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
