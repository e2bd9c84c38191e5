package storage_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestRuntimesStatementsDoNotGrowWithTheFleet counts the statements of a
// page of /info/runtimes (storage.Runtimes, which the handler calls once per
// request) over 10 and over 1,000 instances: the first page, a page by
// cursor, a page by number near the start and one deep in the second half
// (whose boundary is found from the end), a page beyond the end, each with no
// filter, with plan and region (an index intersection), and with every state
// (the archive merged in). A page is BEGIN, the settings, the count, the
// page and COMMIT: 5 statements whatever the number of runtimes and the page;
// a page beyond the end is known empty from the count: 4.
func TestRuntimesStatementsDoNotGrowWithTheFleet(t *testing.T) {
	t.Parallel()
	const size = 2
	type result struct{ statements, rows int }
	counts := map[int]map[string]result{}
	for _, n := range []int{10, 1000} {
		f := newFixture(t, nil)
		// Live instances in three states, plans and regions, a tenth
		// archived, each with a provisioning.
		for _, sql := range []string{
			fmt.Sprintf(`INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id, user_id,
				service_id, plan_id, plan_name, platform_region, provider, provider_region, created_at, state, shoot_name)
			SELECT 'inst-'||g, 'rt-'||g, 'ga-'||(g %% 7), 'sa-'||g, 'u', 'svc', 'p', (ARRAY['azure','aws'])[g %% 2 + 1],
				'cf-eu10', 'azure', (ARRAY['westeurope','eastus'])[g %% 2 + 1],
				now() - g * interval '1 minute',
				CASE WHEN g %% 10 = 3 THEN 'failed' WHEN g %% 10 = 4 THEN 'provisioning' ELSE 'succeeded' END, 'c-'||g
			FROM generate_series(1, %d) g`, n),
			fmt.Sprintf(`INSERT INTO operations (operation_id, instance_id, type, state, deadline, data, created_at)
			SELECT 'op-'||g, 'inst-'||g, 'provision', 'succeeded', now(), '{}', now() - g * interval '1 minute'
			FROM generate_series(1, %d) g`, n),
			fmt.Sprintf(`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
				plan_name, platform_region, provider, provider_region, last_deprovisioning_id, instance_created_at,
				deprovisioning_started_at)
			SELECT 'old-'||g, 'rt-old-'||g, 'ga-1', 'sa', 'p', 'azure', 'cf-eu10', 'azure', 'westeurope', 'd',
				now() - g * interval '10 minutes' - interval '30 seconds', now() FROM generate_series(1, %d) g`, n/10),
			`ANALYZE instances, operations, instances_archive`,
		} {
			if _, err := f.pool.Exec(f.ctx, sql); err != nil {
				t.Fatalf("%d instances: %s: %v", n, sql, err)
			}
		}
		pool, counter := pgtest.CountingPool(t, f.pool)
		store := storage.NewStore(pool, f.cipher, nil)
		counts[n] = map[string]result{}
		for _, filter := range []struct {
			name string
			q    storage.RuntimeQuery
		}{
			{"no filter", storage.RuntimeQuery{}},
			{"plan&region", storage.RuntimeQuery{Plans: []string{"azure"}, Regions: []string{"westeurope"}}},
			{"state=all", storage.RuntimeQuery{States: storage.RuntimeStates}},
		} {
			run := func(name string, q storage.RuntimeQuery) storage.RuntimePage {
				t.Helper()
				q.PageSize = size
				before := counter.Count()
				p, err := store.Runtimes(f.ctx, q)
				if err != nil {
					t.Fatalf("%d instances, %s %s: %v", n, filter.name, name, err)
				}
				counts[n][filter.name+", "+name] = result{int(counter.Count() - before), len(p.Runtimes)}
				return p
			}
			first := run("first page", filter.q)
			if first.Next == nil || first.Total <= 2*size {
				t.Fatalf("%d instances, %s: %d runtimes, next %v: too few to page", n, filter.name, first.Total, first.Next)
			}
			pages := (first.Total + size - 1) / size
			q := filter.q
			q.After = first.Next
			run("page by cursor", q)
			q = filter.q
			q.Page = 2
			run("page=2", q)
			q.Page = pages - 1 // in the second half: its boundary is found from the end
			run("deep page", q)
			q.Page = pages + 5
			if p := run("beyond the end", q); len(p.Runtimes) != 0 || p.Total != first.Total || p.Next != nil {
				t.Errorf("%d instances, %s: a page beyond the end has %d runtimes, total %d (want %d), next %v",
					n, filter.name, len(p.Runtimes), p.Total, first.Total, p.Next)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(counts[10])) {
		small, large := counts[10][name], counts[1000][name]
		t.Logf("%s: %d statements with 10 instances, %d with 1,000", name, small.statements, large.statements)
		want := 5
		if small.rows == 0 {
			want = 4 // beyond the end: no page statement
		}
		if small.statements != want || large.statements != want {
			t.Errorf("%s: %d statements with 10 instances, %d with 1,000; want %d for both",
				name, small.statements, large.statements, want)
		}
	}
}
