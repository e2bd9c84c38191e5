package storage_test

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/storage"
)

// monthsFixture seeds 64 runtimes created over four months of 2026 (16 a
// month, UTC), a quarter of them archived, in several states, plans,
// regions and Kyma states, with runtimes at a month's first instant (two
// of them, one live and one archived, tied on creation time), one hour and
// one microsecond before the next month starts, and on days in between.
// The creation times are written after a fold, so the kept counts by month
// are folded rows and deltas, in a session whose time zone is 14 hours
// ahead of UTC (where a runtime created in the last hour of January UTC is
// created in February): the months are UTC's, whatever the writer's zone.
func monthsFixture(t *testing.T) *fixture {
	f := newFixture(t, nil)
	plans := []string{"azure", "aws", "gcp"}
	regions := []string{"westeurope", "eastus"}
	opsByKind := [][]seedOp{{provOK}, {provRun}, {provFailed}, {provOK, deprovRun}, {provOK, updateOK}}
	var seed []seedRuntime
	var liveIDs, archivedIDs []string
	var liveAt, archivedAt []time.Time
	for i := range 64 {
		r := seedRuntime{id: fmt.Sprintf("m-%02d", i), account: fmt.Sprintf("ga-%d", i%3), subaccount: "sa",
			region: regions[(i/2)%2], plan: plans[i%3], ops: opsByKind[i%5], archived: i%4 == 1}
		if i%13 == 6 {
			r.state = storage.RuntimeSuspended
		}
		seed = append(seed, r)
		month := time.Date(2026, time.Month(1+i/16), 1, 0, 0, 0, 0, time.UTC)
		var at time.Time
		switch p := i % 16; p {
		case 0, 1: // the month's first instant, live and archived tied
			at = month
		case 14: // the last hour: the next month in the writer's zone
			at = month.AddDate(0, 1, 0).Add(-time.Hour)
		case 15: // the last instant
			at = month.AddDate(0, 1, 0).Add(-time.Microsecond)
		default:
			at = month.AddDate(0, 0, p)
		}
		if r.archived {
			archivedIDs, archivedAt = append(archivedIDs, r.id), append(archivedAt, at)
		} else {
			liveIDs, liveAt = append(liveIDs, r.id), append(liveAt, at)
		}
	}
	f.seedRuntimes(seed)
	f.exec(`UPDATE instances SET kyma_state = CASE WHEN right(instance_id, 1) IN ('0', '3', '7') THEN 'Error' ELSE 'Ready' END
		WHERE right(instance_id, 1) <> '5'`)
	if _, err := f.store.FoldRuntimeCounts(f.ctx); err != nil {
		t.Fatal(err)
	}
	err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(f.ctx, `SET LOCAL TimeZone = 'Pacific/Kiritimati'`); err != nil {
			return err
		}
		if _, err := tx.Exec(f.ctx, `UPDATE instances i SET created_at = v.at
			FROM unnest($1::text[], $2::timestamptz[]) v (id, at) WHERE i.instance_id = v.id`, liveIDs, liveAt); err != nil {
			return err
		}
		_, err := tx.Exec(f.ctx, `UPDATE instances_archive a SET instance_created_at = v.at
			FROM unnest($1::text[], $2::timestamptz[]) v (id, at) WHERE a.instance_id = v.id`, archivedIDs, archivedAt)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(DISTINCT created_month) FROM runtime_month_counts WHERE n <> 0`); n < 4 {
		t.Fatalf("the kept counts span %d months, want 4", n)
	}
	return f
}

// TestRuntimesDeepPagesMatchTheCursorWalk: a page by number is the page the
// cursor walk reaches after as many pages (same rows, totalCount and next),
// whatever the page size, the filter and where the page starts: at a
// month's first row, in the middle of a month, at its last row, across a
// tie of a live and an archived runtime at a month's start. Pages by number
// without a selective filter find their first row through the kept counts
// by creation month (runtime_month_counts) and skip keys within that month
// only; with an account filter, through today's boundary from either end.
func TestRuntimesDeepPagesMatchTheCursorWalk(t *testing.T) {
	t.Parallel()
	f := monthsFixture(t)
	cases := append(pageNumberFilters(),
		namedQuery{"region=eastus", storage.RuntimeQuery{Regions: []string{"eastus"}}},
		namedQuery{"state=all&plan=gcp", storage.RuntimeQuery{States: storage.RuntimeStates, Plans: []string{"gcp"}}},
		namedQuery{"kyma_state=Ready", storage.RuntimeQuery{KymaStates: []string{"Ready"}}},
		namedQuery{"state=all&kyma_state=Ready,Error", storage.RuntimeQuery{States: storage.RuntimeStates, KymaStates: []string{"Ready", "Error"}}},
		namedQuery{"state=succeeded&kyma_state=Ready&region=eastus", storage.RuntimeQuery{States: []storage.RuntimeState{storage.RuntimeSucceeded},
			KymaStates: []string{"Ready"}, Regions: []string{"eastus"}}},
		namedQuery{"account, state=all (not kept)", storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-1", "ga-2"}, States: storage.RuntimeStates}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, size := range []int{1, 2, 5, 16} {
				// The walk: page 1, then each page's next.
				var walk []storage.RuntimePage
				q := tc.q
				q.PageSize = size
				for {
					p, err := f.store.Runtimes(f.ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					walk = append(walk, p)
					if p.Next == nil {
						break
					}
					q.After = p.Next
				}
				if walk[0].Total < 3 {
					t.Fatalf("size %d: only %d runtimes match", size, walk[0].Total)
				}
				for n := 2; n <= len(walk)+1; n++ {
					q := tc.q
					q.Page, q.PageSize = n, size
					p, err := f.store.Runtimes(f.ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					want := storage.RuntimePage{Runtimes: []storage.Runtime{}, Total: walk[0].Total}
					if n <= len(walk) {
						want = walk[n-1]
					}
					if !reflect.DeepEqual(p, want) {
						t.Fatalf("page %d of %d: %v (total %d, next %v), the walk's: %v (total %d, next %v)", n, size,
							ids(p), p.Total, p.Next, ids(want), want.Total, want.Next)
					}
				}
			}
		})
	}
}

// TestRuntimesDeepPageSkipsWithinItsMonth: the boundary of a page by number
// reads the keys of the month holding its first row only, not those of the
// months before it (nor after, counting from the month's end).
func TestRuntimesDeepPageSkipsWithinItsMonth(t *testing.T) {
	t.Parallel()
	f := monthsFixture(t)
	// Key reads of the boundary: index-only scans of instances or the
	// archive, and how many entries each returned.
	keyReads := regexp.MustCompile(`Index Only Scan (?:Backward )?using (\w+) on instances\w* \w+ \(actual rows=(\d+) loops=1\)`)
	for _, tc := range []struct {
		name string
		q    storage.RuntimeQuery
	}{
		// Offset 37 of the 48 live runtimes (12 a month) and 42 of all 64
		// (16 a month): in the fourth and the third month, the boundary
		// 10 and 21 keys from the listing's end.
		{"default states", storage.RuntimeQuery{Page: 38, PageSize: 1}},
		{"state=all", storage.RuntimeQuery{Page: 43, PageSize: 1, States: storage.RuntimeStates}},
	} {
		err := pgx.BeginTxFunc(f.ctx, f.pool, storage.RuntimesTxOptions, func(tx pgx.Tx) error {
			count, countArgs := storage.RuntimesCountSQL(tc.q)
			c, err := storage.ScanRuntimesCount(tx.QueryRow(f.ctx, count, countArgs...))
			if err != nil {
				return err
			}
			if c.Month.IsZero() || c.InMonth > 16 {
				return fmt.Errorf("the count placed no month (%+v)", c)
			}
			page, pageArgs := storage.RuntimesPageSQL(tc.q, c)
			rows, _ := tx.Query(f.ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+page, pageArgs...)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			plan := strings.Join(lines, "\n")
			reads := keyReads.FindAllStringSubmatch(plan, -1)
			if len(reads) == 0 {
				return fmt.Errorf("no index-only scan of keys:\n%s", plan)
			}
			for _, m := range reads {
				// Half the month and the key the boundary stops on, at most.
				if n, _ := strconv.Atoi(m[2]); n > c.InMonth/2+1 {
					return fmt.Errorf("%s: %d keys read, the month (%s) holds %d:\n%s", m[1], n, c.Month, c.InMonth, plan)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
