package orchestration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/orchestration"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is a database with keb's schema, the real (insert-only) queue and
// a scheduler whose clock the test sets. No engine runs: the test finishes
// upgrades itself, as a worker would.
type world struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	store *storage.Orchestrations
	sched *orchestration.Scheduler
	now   time.Time
}

func newWorld(t *testing.T, windows string, pool *pgxpool.Pool) *world {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	q, err := process.NewQueue(pool, process.QueueConfig{}, log)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := maintenance.ParseConfig(windows)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: t.Context(), pool: pool, store: storage.NewOrchestrations(pool, q)}
	w.sched = orchestration.NewScheduler(w.store, cfg, log)
	w.sched.Now = func() time.Time { return w.now }
	return w
}

// runtime writes a provisioned instance with a maintenance window ("" for
// none resolved).
func (w *world) runtime(id, ga, plan, region, state, begin, end string) {
	w.t.Helper()
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id,
		user_id, service_id, plan_id, plan_name, platform_region, provider_region, shoot_name, state,
		maintenance_window_begin, maintenance_window_end, created_at)
		VALUES ($1, 'rt-'||$1, $2, 'sa-'||$2, 'u', 's', 'p-'||$3, $3, 'cf-eu10', $4, 'c-'||$1, $5, $6, $7,
			now() + (SELECT count(*) FROM instances) * interval '1 ms')`,
		id, ga, plan, region, state, begin, end); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) orchestrate(body string) string {
	w.t.Helper()
	p, err := orchestration.ParseRequest([]byte(body), storage.OperationTypeUpgradeKyma, orchestration.Defaults{KymaVersion: "2.30.0"})
	if err != nil {
		w.t.Fatal(err)
	}
	raw, _ := json.Marshal(p)
	id := fmt.Sprintf("orch-%d", time.Now().UnixNano())
	if err := w.store.Create(w.ctx, storage.Orchestration{ID: id, Type: storage.OperationTypeUpgradeKyma, Parameters: raw}); err != nil {
		w.t.Fatal(err)
	}
	return id
}

func (w *world) advance(id string) time.Duration {
	w.t.Helper()
	d, err := w.sched.Advance(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

// running lists the instances with an upgrade of the orchestration in progress.
func (w *world) running(id string) []string {
	w.t.Helper()
	rows, _ := w.pool.Query(w.ctx, `SELECT instance_id FROM operations WHERE orchestration_id = $1 AND state = 'in progress'
		ORDER BY instance_id`, id)
	var out []string
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

// finish ends the instances' running upgrades as a worker would.
func (w *world) finish(state string, instances ...string) {
	w.t.Helper()
	if _, err := w.pool.Exec(w.ctx, `UPDATE operations SET state = $1, finished_at = now()
		WHERE instance_id = ANY($2) AND state = 'in progress'`, state, instances); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) targets(id string) map[string]storage.Target {
	w.t.Helper()
	list, _, err := w.store.Targets(w.ctx, id, nil, 1, 1000)
	if err != nil {
		w.t.Fatal(err)
	}
	m := map[string]storage.Target{}
	for _, t := range list {
		m[t.InstanceID] = t
	}
	return m
}

func at(day, h, m int) time.Time { return time.Date(2026, 1, day, h, m, 0, 0, time.UTC) }

// TestMaintenanceWindows runs an orchestration with the maintenanceWindow
// schedule on an injected clock: each runtime's upgrade starts at the next
// begin of its own window (or its plan's/region's configured one), never
// outside it, and one whose window closed while it waited for a worker
// waits for the next day's.
func TestMaintenanceWindows(t *testing.T) {
	w := newWorld(t, "default=10:00-11:00,plan:trial=12:00-13:00", pgtest.NewPool(t))
	w.runtime("a", "ga", "azure", "westeurope", "succeeded", "04:00:00", "08:00:00")
	w.runtime("b", "ga", "azure", "westeurope", "succeeded", "22:00:00", "02:00:00")
	w.runtime("c", "ga", "azure", "westeurope", "succeeded", "", "") // configured default
	w.runtime("d", "ga", "azure", "westeurope", "succeeded", "", "")
	w.runtime("e", "ga", "trial", "westeurope", "succeeded", "", "") // its plan's window
	w.now = at(1, 3, 0)
	id := w.orchestrate(`{"targets": {"include": [{"target": "all"}]}, "strategy": {"schedule": "maintenanceWindow", "parallel": {"workers": 1}}}`)

	if d := w.advance(id); d != w.sched.MaxWait || len(w.running(id)) != 0 {
		t.Fatalf("03:00: sleeps %s with %v running; want MaxWait and nothing started (no window open)", d, w.running(id))
	}
	ts := w.targets(id)
	for inst, want := range map[string]time.Time{"a": at(1, 4, 0), "b": at(1, 22, 0), "c": at(1, 10, 0), "d": at(1, 10, 0), "e": at(1, 12, 0)} {
		if !ts[inst].NotBefore.Equal(want) {
			t.Errorf("%s scheduled at %s, want %s", inst, ts[inst].NotBefore, want)
		}
	}
	if ts["c"].MaintenanceWindowBegin != "10:00:00" || ts["e"].MaintenanceWindowEnd != "13:00:00" {
		t.Errorf("resolved windows: c %+v, e %+v", ts["c"], ts["e"])
	}

	w.now = at(1, 4, 30)
	w.advance(id)
	if got := w.running(id); fmt.Sprint(got) != "[a]" {
		t.Fatalf("04:30: running %v, want [a]", got)
	}
	w.finish("succeeded", "a")
	w.now = at(1, 10, 59)
	w.advance(id)
	if got := w.running(id); fmt.Sprint(got) != "[c]" {
		t.Fatalf("10:59: running %v, want [c] (one worker; d waits)", got)
	}
	w.finish("succeeded", "c")
	// d's window closed while it waited for the worker: tomorrow's.
	w.now = at(1, 11, 30)
	w.advance(id)
	if got := w.running(id); len(got) != 0 {
		t.Fatalf("11:30: running %v, want none (d's window has closed)", got)
	}
	if nb := w.targets(id)["d"].NotBefore; !nb.Equal(at(2, 10, 0)) {
		t.Errorf("d rescheduled at %s, want %s", nb, at(2, 10, 0))
	}
	w.now = at(1, 12, 15)
	w.advance(id)
	w.finish("succeeded", "e")
	w.now = at(1, 23, 0)
	w.advance(id)
	if got := w.running(id); fmt.Sprint(got) != "[b]" {
		t.Fatalf("23:00: running %v, want [b]", got)
	}
	w.finish("failed", "b")
	w.now = at(2, 10, 1)
	w.advance(id)
	w.finish("succeeded", "d")
	if d := w.advance(id); d != 0 {
		t.Errorf("the finished orchestration sleeps %s, want 0 (its job ends)", d)
	}
	o, err := w.store.Get(w.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if o.State != storage.OrchestrationFailed || o.Description != "Finished 5 operations: 4 succeeded, 1 failed, 0 skipped" {
		t.Errorf("orchestration ended %s: %s", o.State, o.Description)
	}
}

// TestSchedulerStatementsDoNotGrowWithTheFleet counts the statements of the
// scheduler's passes over orchestrations of 10 and of 1,000 runtimes with the
// same workers: freezing the list and each pass cost the same number of
// statements whatever the fleet's size, plus a constant per upgrade started
// (its queue entry).
func TestSchedulerStatementsDoNotGrowWithTheFleet(t *testing.T) {
	counts := map[int][2]int64{}
	for _, n := range []int{10, 1000} {
		pool, counter := countingPool(t)
		w := newWorld(t, "", pool)
		for i := range n {
			w.runtime(fmt.Sprintf("r%04d", i), "ga", "azure", "westeurope", "succeeded", "", "")
		}
		w.now = time.Now()
		id := w.orchestrate(`{"targets": {"include": [{"target": "all"}]}, "strategy": {"parallel": {"workers": 5}}}`)
		before := counter.Count()
		w.advance(id) // freezes n targets, starts 5
		first := counter.Count() - before
		w.finish("succeeded", w.running(id)...)
		before = counter.Count()
		w.advance(id) // records 5 finished, starts 5
		counts[n] = [2]int64{first, counter.Count() - before}
		if got := len(w.running(id)); got != 5 {
			t.Fatalf("%d runtimes: %d running after the second pass, want 5", n, got)
		}
	}
	t.Logf("statements of the first pass / a later pass: 10 runtimes %v, 1,000 runtimes %v", counts[10], counts[1000])
	if counts[10] != counts[1000] {
		t.Errorf("the scheduler's statements grow with the fleet: 10 runtimes %v, 1,000 runtimes %v", counts[10], counts[1000])
	}
}

// statementCounter counts the statements a pool sends, leaving out River's
// insert notifications: River rate-limits them by time (at most one per
// queue in a short interval), so whether a pass sends one depends on the
// clock, not on the scheduler.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "name: PGNotifyMany") {
		c.n.Add(1)
	}
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) Count() int64 { return c.n.Load() }

func countingPool(t *testing.T) (*pgxpool.Pool, *statementCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewPool(t).Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	c := &statementCounter{}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, c
}

// TestSelectorsAndSkips freezes the targets of include/exclude selectors
// against the database: fields ANDed within a selector, selectors ORed,
// exclude wins, and runtimes that are not succeeded are listed skipped.
func TestSelectorsAndSkips(t *testing.T) {
	w := newWorld(t, "", pgtest.NewPool(t))
	w.runtime("a1", "ga-a", "azure", "westeurope", "succeeded", "", "")
	w.runtime("a2", "ga-a", "aws", "eu-central-1", "succeeded", "", "")
	w.runtime("b1", "ga-b", "azure", "westeurope", "succeeded", "", "")
	w.runtime("b2", "ga-b", "azure", "eastus", "suspended", "", "")
	w.runtime("c1", "ga-c", "gcp", "europe-west3", "failed", "", "")
	w.now = time.Now()
	for body, want := range map[string]string{
		`{"targets": {"include": [{"globalAccount": "ga-a", "planName": "azure"}]}}`:                                        "map[a1:pending]",
		`{"targets": {"include": [{"globalAccount": "ga-a"}, {"region": "westeurope"}]}}`:                                   "map[a1:pending a2:pending b1:pending]",
		`{"targets": {"include": [{"target": "all"}], "exclude": [{"globalAccount": "ga-a"}, {"runtimeID": "rt-b1"}]}}`:     "map[b2:skipped c1:skipped]",
		`{"targets": {"include": [{"shoot": "c-b2"}, {"subAccount": "sa-ga-c"}]}}`:                                          "map[b2:skipped c1:skipped]",
		`{"targets": {"include": [{"planName": "nonexistent"}]}}`:                                                           "map[]",
		`{"targets": {"include": [{"target": "all"}], "exclude": [{"planName": "azure", "region": "westeurope"}]}, "x": 1}`: "error",
	} {
		if want == "error" {
			if _, err := orchestration.ParseRequest([]byte(body), storage.OperationTypeUpgradeKyma, orchestration.Defaults{}); err == nil {
				t.Errorf("%s accepted", body)
			}
			continue
		}
		id := w.orchestrate(body)
		// Workers 1 and no engine: freezing starts one upgrade at most;
		// read the frozen states before it.
		if _, err := w.pool.Exec(w.ctx, `UPDATE orchestrations SET state = 'canceled' WHERE state IN ('in progress', 'canceling')`); err != nil {
			t.Fatal(err)
		}
		w.advance(id)
		got := map[string]string{}
		for inst, tg := range w.targets(id) {
			st := tg.State
			if st == storage.TargetInProgress {
				st = storage.TargetPending // started by the pass
			}
			got[inst] = string(st)
		}
		w.finish("succeeded", "a1", "a2", "b1")
		if fmt.Sprint(got) != want {
			t.Errorf("%s froze %v, want %s", body, got, want)
		}
	}
}
