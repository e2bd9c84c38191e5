package storage_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestCensusReadsNoWholeTable EXPLAINs the metrics census's statements over
// 5,000 instances, 50 of them with an operation running: none reads rows of
// instances beyond one per running operation, so a refresh costs an
// index-only scan of small tuples and the running operations, not the
// fleet's rows (at 1,000,000 instances the table is 760 MB). Sequential
// scans are disabled so that the plan shows whether an index can serve each
// statement at all, whatever this small table's costs.
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
	// Every node reading instances: its kind, its rows and its loops.
	reads := regexp.MustCompile(`(Seq Scan|Index Only Scan|Index Scan|Bitmap Heap Scan)(?: Backward)?(?: using \w+)? on instances(?: \w+)? \(actual rows=(\d+) loops=(\d+)\)`)
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
			found := reads.FindAllStringSubmatch(plan, -1)
			if strings.Contains(sql, "FROM instances") && len(found) == 0 {
				t.Errorf("no read of instances found in the plan of %s:\n%s", sql, plan)
			}
			for _, m := range found {
				n, _ := strconv.Atoi(m[2])
				loops, _ := strconv.Atoi(m[3])
				switch {
				case m[1] == "Index Only Scan":
					// Keys only: the whole index is read, not the rows.
				case m[1] == "Seq Scan" || n*loops > 50:
					t.Errorf("%s reads %d rows of instances (%s, %d loops) for 50 running operations:\n%s",
						sql, n*loops, m[1], loops, plan)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
