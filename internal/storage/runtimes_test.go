package storage_test

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// seedOp is one operation of a seeded instance, oldest first.
type seedOp struct {
	typ, state, shoot string
}

// seedRuntime is an instance written straight into the tables, with a fixed
// creation time so the listing order is known.
type seedRuntime struct {
	id, account, subaccount, region, plan string
	ops                                   []seedOp
	// archived: in instances_archive instead of instances. No instance is
	// in both (Store.ArchiveAndRemove, migration 00006).
	archived bool
	// state, when set, is written to instances.state instead of the state
	// the operations imply: for states no seeded operation reaches
	// (suspended) and to tell the column from the operations.
	state     storage.RuntimeState
	expiredAt *time.Time
}

// impliedState is the runtime state the store keeps on an instance whose
// operations are ops (oldest first): the rules of migration 00005 and of
// Store.Finish, decided by the newest operation.
func impliedState(ops []seedOp) storage.RuntimeState {
	if len(ops) == 0 {
		return storage.RuntimeProvisioning
	}
	last := ops[len(ops)-1]
	switch {
	case last.typ == "deprovision" && last.state == "succeeded":
		return storage.RuntimeDeprovisioned
	case last.state == "failed":
		return storage.RuntimeFailed
	case last.typ == "provision" && last.state == "in progress":
		return storage.RuntimeProvisioning
	case last.typ == "deprovision" && last.state == "in progress":
		return storage.RuntimeDeprovisioning
	default:
		return storage.RuntimeSucceeded
	}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (f *fixture) seedRuntimes(rs []seedRuntime) {
	f.t.Helper()
	for n, r := range rs {
		created := epoch.Add(time.Duration(n) * time.Minute)
		shoot := ""
		for _, op := range r.ops {
			if op.shoot != "" {
				shoot = op.shoot
			}
		}
		if r.archived {
			f.exec(`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
				plan_name, platform_region, provider, provider_region, shoot_name, provisioning_state,
				last_deprovisioning_id, instance_created_at, deprovisioning_started_at)
				VALUES ($1, 'rt-'||$1, $2, $3, 'plan-id-'||$4, $4, 'cf-eu10', 'azure', $5, $6, 'succeeded',
				'deprov-'||$1, $7, $7::timestamptz + interval '1 hour')`,
				r.id, r.account, r.subaccount, r.plan, r.region, shoot, created)
			continue
		}
		state := r.state
		if state == "" {
			state = impliedState(r.ops)
		}
		f.exec(`INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id, user_id, service_id,
			plan_id, plan_name, platform_region, provider, provider_region, parameters, encrypted_credentials, created_at,
			state, shoot_name, expired_at)
			VALUES ($1, 'rt-'||$1, $2, $3, 'user@example.com', 'svc', 'plan-id-'||$4, $4, 'cf-eu10', 'azure', $5,
			'{"name":"x"}', 'sealed-secret', $6, $7, $8, $9)`,
			r.id, r.account, r.subaccount, r.plan, r.region, created, state, shoot, r.expiredAt)
		for k, op := range r.ops {
			f.exec(`INSERT INTO operations (operation_id, instance_id, type, state, description, finished_stages,
				error_message, deadline, data, created_at)
				VALUES ($1, $2, $3, $4, 'desc', '{start}', CASE WHEN $4 = 'failed' THEN 'boom' ELSE '' END,
				now() + interval '1 hour', jsonb_build_object('shootName', $5::text), $6)`,
				fmt.Sprintf("%s-op%d", r.id, k), r.id, op.typ, op.state, op.shoot, created.Add(time.Duration(k+1)*time.Second))
		}
	}
}

var (
	provOK     = seedOp{"provision", "succeeded", ""}
	provFailed = seedOp{"provision", "failed", ""}
	provRun    = seedOp{"provision", "in progress", ""}
	deprovRun  = seedOp{"deprovision", "in progress", ""}
	updateOK   = seedOp{"update", "succeeded", ""}
)

func shootOK(name string) seedOp { return seedOp{"provision", "succeeded", name} }

// listingFixture covers every state, two accounts, two regions, two plans.
func listingFixture(t *testing.T) *fixture {
	f := newFixture(t, nil)
	f.seedRuntimes([]seedRuntime{
		{id: "a-ok", account: "ga-1", subaccount: "sa-1", region: "westeurope", plan: "azure", ops: []seedOp{shootOK("c-aok"), updateOK}},
		{id: "a-prov", account: "ga-1", subaccount: "sa-2", region: "westeurope", plan: "azure", ops: []seedOp{provRun}},
		{id: "a-fail", account: "ga-1", subaccount: "sa-1", region: "eastus", plan: "trial", ops: []seedOp{provFailed}},
		{id: "b-deprov", account: "ga-2", subaccount: "sa-3", region: "eastus", plan: "azure", ops: []seedOp{shootOK("c-bdep"), deprovRun}},
		{id: "b-arch", account: "ga-2", subaccount: "sa-3", region: "westeurope", plan: "azure", ops: []seedOp{shootOK("c-barch")}, archived: true},
		{id: "b-ok", account: "ga-2", subaccount: "sa-4", region: "eastus", plan: "trial", ops: []seedOp{shootOK("c-bok")}},
		{id: "b-refail", account: "ga-2", subaccount: "sa-4", region: "eastus", plan: "azure", ops: []seedOp{provOK, seedOp{"deprovision", "failed", ""}}},
	})
	return f
}

func ids(p storage.RuntimePage) []string {
	out := make([]string, 0, len(p.Runtimes))
	for _, r := range p.Runtimes {
		out = append(out, r.InstanceID)
	}
	return out
}

func TestRuntimesStatesAndFilters(t *testing.T) {
	t.Parallel()
	f := listingFixture(t)
	cases := []struct {
		name string
		q    storage.RuntimeQuery
		want []string // in listing order
	}{
		{name: "default hides deprovisioned", q: storage.RuntimeQuery{}, want: []string{"a-ok", "a-prov", "a-fail", "b-deprov", "b-ok", "b-refail"}},
		{name: "all states", q: storage.RuntimeQuery{States: storage.RuntimeStates}, want: []string{"a-ok", "a-prov", "a-fail", "b-deprov", "b-arch", "b-ok", "b-refail"}},
		{name: "deprovisioned only from archive", q: storage.RuntimeQuery{States: []storage.RuntimeState{"deprovisioned"}}, want: []string{"b-arch"}},
		{name: "provisioning", q: storage.RuntimeQuery{States: []storage.RuntimeState{"provisioning"}}, want: []string{"a-prov"}},
		{name: "succeeded", q: storage.RuntimeQuery{States: []storage.RuntimeState{"succeeded"}}, want: []string{"a-ok", "b-ok"}},
		{name: "failed (provisioning or deprovisioning)", q: storage.RuntimeQuery{States: []storage.RuntimeState{"failed"}}, want: []string{"a-fail", "b-refail"}},
		{name: "deprovisioning", q: storage.RuntimeQuery{States: []storage.RuntimeState{"deprovisioning"}}, want: []string{"b-deprov"}},
		{name: "suspended (none here)", q: storage.RuntimeQuery{States: []storage.RuntimeState{"suspended"}}, want: []string{}},
		{name: "states OR", q: storage.RuntimeQuery{States: []storage.RuntimeState{"provisioning", "deprovisioned"}}, want: []string{"a-prov", "b-arch"}},
		{name: "account", q: storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-1"}}, want: []string{"a-ok", "a-prov", "a-fail"}},
		{name: "account OR", q: storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-1", "ga-2"}}, want: []string{"a-ok", "a-prov", "a-fail", "b-deprov", "b-ok", "b-refail"}},
		{name: "subaccount", q: storage.RuntimeQuery{SubAccountIDs: []string{"sa-1", "sa-4"}}, want: []string{"a-ok", "a-fail", "b-ok", "b-refail"}},
		{name: "instance_id", q: storage.RuntimeQuery{InstanceIDs: []string{"a-ok", "b-arch"}}, want: []string{"a-ok"}},
		{name: "instance_id archived with all", q: storage.RuntimeQuery{InstanceIDs: []string{"a-ok", "b-arch"}, States: storage.RuntimeStates}, want: []string{"a-ok", "b-arch"}},
		{name: "runtime_id", q: storage.RuntimeQuery{RuntimeIDs: []string{"rt-b-ok"}}, want: []string{"b-ok"}},
		{name: "region", q: storage.RuntimeQuery{Regions: []string{"westeurope"}}, want: []string{"a-ok", "a-prov"}},
		{name: "plan", q: storage.RuntimeQuery{Plans: []string{"trial"}}, want: []string{"a-fail", "b-ok"}},
		{name: "shoot live", q: storage.RuntimeQuery{Shoots: []string{"c-aok", "c-bok"}}, want: []string{"a-ok", "b-ok"}},
		{name: "shoot archived", q: storage.RuntimeQuery{Shoots: []string{"c-barch"}, States: []storage.RuntimeState{"deprovisioned"}}, want: []string{"b-arch"}},
		{name: "AND across filters", q: storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-2"}, Plans: []string{"azure"}, Regions: []string{"eastus"}}, want: []string{"b-deprov", "b-refail"}},
		{name: "AND across with state", q: storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-1", "ga-2"}, States: []storage.RuntimeState{"succeeded", "failed"}, Plans: []string{"trial"}}, want: []string{"a-fail", "b-ok"}},
		{name: "no match", q: storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-1"}, Regions: []string{"nowhere"}}, want: []string{}},
		// Without a selective filter, two or more of state, plan and region
		// are counted as an intersection of their indexes.
		{name: "plan AND region", q: storage.RuntimeQuery{Plans: []string{"azure"}, Regions: []string{"eastus"}}, want: []string{"b-deprov", "b-refail"}},
		{name: "state AND plan", q: storage.RuntimeQuery{States: []storage.RuntimeState{"failed"}, Plans: []string{"azure"}}, want: []string{"b-refail"}},
		{name: "states OR AND region", q: storage.RuntimeQuery{States: []storage.RuntimeState{"succeeded", "failed"}, Regions: []string{"eastus"}}, want: []string{"a-fail", "b-ok", "b-refail"}},
		{name: "state AND plan AND region", q: storage.RuntimeQuery{States: []storage.RuntimeState{"deprovisioning"}, Plans: []string{"azure"}, Regions: []string{"eastus"}}, want: []string{"b-deprov"}},
		{name: "all states AND plan AND region", q: storage.RuntimeQuery{States: storage.RuntimeStates, Plans: []string{"azure"}, Regions: []string{"westeurope"}}, want: []string{"a-ok", "a-prov", "b-arch"}},
		{name: "all but succeeded AND plan AND region", q: storage.RuntimeQuery{States: []storage.RuntimeState{"provisioning", "failed", "deprovisioning", "deprovisioned", "suspended"},
			Plans: []string{"azure"}, Regions: []string{"westeurope"}}, want: []string{"a-prov", "b-arch"}},
		{name: "plans OR AND regions OR", q: storage.RuntimeQuery{Plans: []string{"azure", "trial"}, Regions: []string{"eastus", "nowhere"}}, want: []string{"a-fail", "b-deprov", "b-ok", "b-refail"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			page, err := f.store.Runtimes(f.ctx, tc.q)
			if err != nil {
				t.Fatalf("Runtimes: %v", err)
			}
			if got := ids(page); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if page.Total != len(tc.want) || page.Next != nil {
				t.Fatalf("total %d next %v, want %d and no next", page.Total, page.Next, len(tc.want))
			}
		})
	}
}

// TestRuntimesStateColumnDrivesFilter shows that the listing takes state and
// shoot name from the instance's columns, not from its operations: each
// instance here has columns that disagree with what its operations imply.
func TestRuntimesStateColumnDrivesFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.seedRuntimes([]seedRuntime{
		// Operations say succeeded; the column says failed.
		{id: "col-failed", account: "ga-1", subaccount: "sa-1", region: "westeurope", plan: "azure",
			ops: []seedOp{shootOK("c-ops")}, state: storage.RuntimeFailed},
		// Operations say provisioning; the column says succeeded.
		{id: "col-ok", account: "ga-1", subaccount: "sa-1", region: "westeurope", plan: "azure",
			ops: []seedOp{provRun}, state: storage.RuntimeSucceeded},
	})
	f.exec(`UPDATE instances SET shoot_name = 'c-column' WHERE instance_id = 'col-failed'`)
	cases := []struct {
		name string
		q    storage.RuntimeQuery
		want []string
	}{
		{name: "failed by column", q: storage.RuntimeQuery{States: []storage.RuntimeState{"failed"}}, want: []string{"col-failed"}},
		{name: "succeeded by column", q: storage.RuntimeQuery{States: []storage.RuntimeState{"succeeded"}}, want: []string{"col-ok"}},
		{name: "provisioning by operations is not", q: storage.RuntimeQuery{States: []storage.RuntimeState{"provisioning"}}, want: []string{}},
		{name: "shoot by column", q: storage.RuntimeQuery{Shoots: []string{"c-column"}}, want: []string{"col-failed"}},
		{name: "shoot by operation data is not", q: storage.RuntimeQuery{Shoots: []string{"c-ops"}}, want: []string{}},
		{name: "empty shoot matches nothing", q: storage.RuntimeQuery{Shoots: []string{""}}, want: []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			page, err := f.store.Runtimes(f.ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(page); !reflect.DeepEqual(got, tc.want) || page.Total != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, page.Total, tc.want)
			}
		})
	}
	page, err := f.store.Runtimes(f.ctx, storage.RuntimeQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Runtimes {
		want := map[string]storage.RuntimeState{"col-failed": "failed", "col-ok": "succeeded"}[r.InstanceID]
		if r.State != want {
			t.Errorf("%s shown as %s, want %s (the column)", r.InstanceID, r.State, want)
		}
		if r.InstanceID == "col-failed" && r.ShootName != "c-column" {
			t.Errorf("col-failed shoot %q, want c-column (the column)", r.ShootName)
		}
	}
}

// TestRuntimesCountsEveryState checks, for every state including suspended
// (written straight into the column, as suspension will), that the count
// equals the rows listed, whatever the page size, and that the counts of the
// states add up to the whole listing; and that expiredAt is returned.
func TestRuntimesCountsEveryState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	expired := epoch.Add(48 * time.Hour)
	var seed []seedRuntime
	want := map[storage.RuntimeState][]string{}
	add := func(state storage.RuntimeState, r seedRuntime) {
		r.account, r.subaccount, r.region, r.plan = "ga-1", "sa", "westeurope", "azure"
		seed = append(seed, r)
		want[state] = append(want[state], r.id)
	}
	for i := range 3 {
		add("provisioning", seedRuntime{id: fmt.Sprintf("prov-%d", i), ops: []seedOp{provRun}})
		add("succeeded", seedRuntime{id: fmt.Sprintf("ok-%d", i), ops: []seedOp{shootOK(fmt.Sprintf("c-ok-%d", i))}})
		add("failed", seedRuntime{id: fmt.Sprintf("fail-%d", i), ops: []seedOp{provFailed}})
		add("deprovisioning", seedRuntime{id: fmt.Sprintf("deprov-%d", i), ops: []seedOp{provOK, deprovRun}})
		add("suspended", seedRuntime{id: fmt.Sprintf("susp-%d", i), ops: []seedOp{provOK, {"deprovision", "succeeded", ""}},
			state: storage.RuntimeSuspended, expiredAt: &expired})
		add("deprovisioned", seedRuntime{id: fmt.Sprintf("arch-%d", i), ops: []seedOp{provOK}, archived: true})
	}
	// A live instance in state deprovisioned: no pipeline leaves one
	// (ArchiveAndRemove deletes the deprovisioning before it can succeed),
	// but the state is valid and the listing shows it from instances.
	add("deprovisioned", seedRuntime{id: "gone-live", ops: []seedOp{provOK, {"deprovision", "succeeded", ""}}})
	f.seedRuntimes(seed)

	total := 0
	for _, state := range storage.RuntimeStates {
		total += len(want[state])
		for _, size := range []int{2, 100} {
			page, err := f.store.Runtimes(f.ctx, storage.RuntimeQuery{States: []storage.RuntimeState{state}, PageSize: size})
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != len(want[state]) {
				t.Errorf("state %s, page size %d: total %d, want %d", state, size, page.Total, len(want[state]))
			}
			if size == 100 && !reflect.DeepEqual(ids(page), want[state]) {
				t.Errorf("state %s: listed %v, want %v", state, ids(page), want[state])
			}
			for _, r := range page.Runtimes {
				if r.State != state {
					t.Errorf("%s listed under %s with state %s", r.InstanceID, state, r.State)
				}
				if (state == "suspended") != (r.ExpiredAt != nil) {
					t.Errorf("%s expiredAt %v", r.InstanceID, r.ExpiredAt)
				} else if r.ExpiredAt != nil && !r.ExpiredAt.Equal(expired) {
					t.Errorf("%s expiredAt %v, want %v", r.InstanceID, r.ExpiredAt, expired)
				}
			}
		}
	}
	for _, tc := range []struct {
		name   string
		states []storage.RuntimeState
		want   int
	}{
		{name: "all", states: storage.RuntimeStates, want: total},
		{name: "default", states: nil, want: total - len(want["deprovisioned"])},
		{name: "suspended or failed", states: []storage.RuntimeState{"suspended", "failed"}, want: len(want["suspended"]) + len(want["failed"])},
		{name: "all but succeeded", states: []storage.RuntimeState{"provisioning", "failed", "deprovisioning", "deprovisioned", "suspended"},
			want: total - len(want["succeeded"])},
	} {
		page, err := f.store.Runtimes(f.ctx, storage.RuntimeQuery{States: tc.states, PageSize: 5})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != tc.want {
			t.Errorf("%s: total %d, want %d", tc.name, page.Total, tc.want)
		}
	}
}

// TestRuntimesDeprovisioningListedOnce follows one instance through the end
// of its deprovisioning with the store's own writes: while the
// deprovisioning runs it is listed once, live, as deprovisioning; after
// ArchiveAndRemove once, archived, as deprovisioned. Every listing that
// includes deprovisioned reads both tables without excluding either's rows
// from the other, so this is what keeps it from being listed twice.
func TestRuntimesDeprovisioningListedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	archive := f.deprovisioningInstance() // inst-1, deprovisioning op-d in progress
	f.provision("inst-2", "ga-1", "azure", "op-2")

	listed := func(q storage.RuntimeQuery) (rows []storage.Runtime, total int) {
		t.Helper()
		page, err := f.store.Runtimes(f.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Runtimes {
			if r.InstanceID == "inst-1" {
				rows = append(rows, r)
			}
		}
		return rows, page.Total
	}
	type listing struct {
		name   string
		q      storage.RuntimeQuery
		listed bool // inst-1 is on the page
		total  int
	}
	check := func(when string, wantState storage.RuntimeState, cases []listing) {
		t.Helper()
		for _, c := range cases {
			rows, total := listed(c.q)
			want := 0
			if c.listed {
				want = 1
			}
			if len(rows) != want || total != c.total {
				t.Errorf("%s, %s: inst-1 listed %d times (total %d), want %d (total %d)", when, c.name, len(rows), total, want, c.total)
				continue
			}
			if c.listed && rows[0].State != wantState {
				t.Errorf("%s, %s: inst-1 is %s, want %s", when, c.name, rows[0].State, wantState)
			}
		}
	}

	all := storage.RuntimeQuery{States: storage.RuntimeStates}
	byAccount := storage.RuntimeQuery{States: storage.RuntimeStates, GlobalAccountIDs: []string{"ga-1"}}
	check("deprovisioning", storage.RuntimeDeprovisioning, []listing{
		{name: "state=all", q: all, listed: true, total: 2},
		{name: "state=all&account", q: byAccount, listed: true, total: 2},
		{name: "default", q: storage.RuntimeQuery{}, listed: true, total: 2},
		{name: "state=deprovisioning", q: storage.RuntimeQuery{States: []storage.RuntimeState{"deprovisioning"}}, listed: true, total: 1},
		{name: "state=deprovisioned", q: storage.RuntimeQuery{States: []storage.RuntimeState{"deprovisioned"}}, total: 0},
	})
	rows, _ := listed(all)
	if r := rows[0]; r.DeletedAt != nil || r.Deprovisioning == nil || r.Deprovisioning.ID != "op-d" ||
		r.Deprovisioning.State != storage.OperationInProgress || r.Provisioning == nil || r.Provisioning.ID != "op-p" {
		t.Errorf("deprovisioning inst-1 = %+v (provisioning %+v, deprovisioning %+v)", r, r.Provisioning, r.Deprovisioning)
	}

	if err := f.store.ArchiveAndRemove(f.ctx, archive); err != nil {
		t.Fatal(err)
	}
	check("archived", storage.RuntimeDeprovisioned, []listing{
		{name: "state=all", q: all, listed: true, total: 2},
		{name: "state=all&account", q: byAccount, listed: true, total: 2},
		{name: "default", q: storage.RuntimeQuery{}, total: 1},
		{name: "state=deprovisioning", q: storage.RuntimeQuery{States: []storage.RuntimeState{"deprovisioning"}}, total: 0},
		{name: "state=deprovisioned", q: storage.RuntimeQuery{States: []storage.RuntimeState{"deprovisioned"}}, listed: true, total: 1},
	})
	rows, _ = listed(storage.RuntimeQuery{States: storage.RuntimeStates, AllOperations: true})
	if r := rows[0]; r.DeletedAt == nil || r.Provisioning != nil || r.Deprovisioning == nil ||
		r.Deprovisioning.ID != "op-d" || r.Deprovisioning.State != storage.OperationSucceeded || len(r.Operations) != 0 ||
		!r.CreatedAt.Equal(archive.InstanceCreatedAt) {
		t.Errorf("archived inst-1 = %+v (deprovisioning %+v)", r, r.Deprovisioning)
	}
}

func TestRuntimesRowContents(t *testing.T) {
	t.Parallel()
	f := listingFixture(t)
	page, err := f.store.Runtimes(f.ctx, storage.RuntimeQuery{States: storage.RuntimeStates})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]storage.Runtime{}
	for _, r := range page.Runtimes {
		byID[r.InstanceID] = r
	}
	ok := byID["a-ok"]
	if ok.State != "succeeded" || ok.ShootName != "c-aok" || ok.RuntimeID != "rt-a-ok" || ok.PlatformRegion != "cf-eu10" ||
		ok.Provisioning == nil || ok.Provisioning.ID != "a-ok-op0" || ok.Provisioning.State != "succeeded" ||
		!reflect.DeepEqual(ok.Provisioning.FinishedStages, []string{"start"}) || ok.Deprovisioning != nil || ok.Operations != nil {
		t.Errorf("a-ok = %+v (prov %+v)", ok, ok.Provisioning)
	}
	if d := byID["b-deprov"]; d.State != "deprovisioning" || d.Deprovisioning == nil || d.Deprovisioning.ID != "b-deprov-op1" ||
		d.Provisioning == nil || d.Provisioning.ID != "b-deprov-op0" {
		t.Errorf("b-deprov = %+v", d)
	}
	if fl := byID["a-fail"]; fl.Provisioning == nil || fl.Provisioning.ErrorMessage != "boom" {
		t.Errorf("a-fail provisioning = %+v", fl.Provisioning)
	}
	a := byID["b-arch"]
	if a.State != "deprovisioned" || a.DeletedAt == nil || a.ShootName != "c-barch" || a.Provisioning != nil ||
		a.Deprovisioning == nil || a.Deprovisioning.ID != "deprov-b-arch" || a.Deprovisioning.State != "succeeded" {
		t.Errorf("b-arch = %+v (deprov %+v)", a, a.Deprovisioning)
	}
}

func TestRuntimesAllOperations(t *testing.T) {
	t.Parallel()
	f := listingFixture(t)
	page, err := f.store.Runtimes(f.ctx, storage.RuntimeQuery{States: storage.RuntimeStates, AllOperations: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"a-ok": {"a-ok-op1", "a-ok-op0"}, "a-prov": {"a-prov-op0"}, "a-fail": {"a-fail-op0"},
		"b-deprov": {"b-deprov-op1", "b-deprov-op0"}, "b-arch": {}, "b-ok": {"b-ok-op0"},
		"b-refail": {"b-refail-op1", "b-refail-op0"},
	}
	for _, r := range page.Runtimes {
		got := []string{}
		for _, op := range r.Operations {
			got = append(got, op.ID)
		}
		if !reflect.DeepEqual(got, want[r.InstanceID]) {
			t.Errorf("%s operations %v, want %v (newest first)", r.InstanceID, got, want[r.InstanceID])
		}
	}
}

func TestRuntimesPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var seed []seedRuntime
	for i := range 23 {
		id := fmt.Sprintf("inst-%02d", i)
		r := seedRuntime{id: id, account: "ga-1", subaccount: "sa", region: "westeurope", plan: "azure", ops: []seedOp{provOK}}
		if i%5 == 0 {
			r.archived = true // archived rows interleave with live ones
		}
		seed = append(seed, r)
	}
	f.seedRuntimes(seed)
	// Two instances created at the same instant: the cursor must use the ID
	// as the tie-breaker.
	f.exec(`UPDATE instances SET created_at = $1 WHERE instance_id IN ('inst-06', 'inst-07')`, epoch)
	f.exec(`UPDATE instances_archive SET instance_created_at = $1 WHERE instance_id = 'inst-05'`, epoch)
	base := storage.RuntimeQuery{States: storage.RuntimeStates}
	full, err := f.store.Runtimes(f.ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if full.Total != 23 || len(full.Runtimes) != 23 {
		t.Fatalf("one big page has %d of total %d", len(full.Runtimes), full.Total)
	}
	order := ids(full)
	for _, size := range []int{1, 4, 7, 23} {
		t.Run(fmt.Sprintf("page_size %d", size), func(t *testing.T) {
			t.Parallel()
			var byOffset, byCursor []string
			for page := 1; ; page++ {
				q := base
				q.Page, q.PageSize = page, size
				p, err := f.store.Runtimes(f.ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if p.Total != 23 {
					t.Fatalf("page %d total %d", page, p.Total)
				}
				if len(p.Runtimes) == 0 {
					break
				}
				byOffset = append(byOffset, ids(p)...)
			}
			q := base
			q.PageSize = size
			for {
				p, err := f.store.Runtimes(f.ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				byCursor = append(byCursor, ids(p)...)
				if p.Total != 23 {
					t.Fatalf("cursor page total %d", p.Total)
				}
				if p.Next == nil {
					break
				}
				q.After = p.Next
			}
			if !reflect.DeepEqual(byOffset, order) || !reflect.DeepEqual(byCursor, order) {
				t.Fatalf("pages differ from the full listing:\noffset %v\ncursor %v\nfull   %v", byOffset, byCursor, order)
			}
		})
	}
}

func TestRuntimesStatementCountIsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var seed []seedRuntime
	for i := range 120 {
		seed = append(seed, seedRuntime{id: fmt.Sprintf("inst-%03d", i), account: "ga-1", subaccount: "sa",
			region: "westeurope", plan: "azure", ops: []seedOp{provOK, updateOK}, archived: i%10 == 0})
	}
	f.seedRuntimes(seed)

	pool, counter := pgtest.CountingPool(t, f.pool)
	store := storage.NewStore(pool, f.cipher, nil)

	// Statements per page: BEGIN, the settings (storage.RuntimesTxSettings:
	// JIT off and custom plans, SET LOCAL as one SELECT set_config(...)),
	// the page, the count and COMMIT; with op_detail=all also the page's
	// operations. Before the page ran in a transaction with these settings
	// it was the page and the count: 2, and 3. BEGIN, the settings and
	// COMMIT carry no rows and cost a round trip each.
	want := map[bool]int64{false: 5, true: 6}
	for _, allOps := range []bool{false, true} {
		counts := map[int]int64{}
		for _, size := range []int{1, 100} {
			before := counter.Count()
			p, err := store.Runtimes(f.ctx, storage.RuntimeQuery{States: storage.RuntimeStates, PageSize: size, AllOperations: allOps})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Runtimes) != size {
				t.Fatalf("page of %d has %d rows", size, len(p.Runtimes))
			}
			counts[size] = counter.Count() - before
		}
		t.Logf("op_detail all=%v: statements per page: size 1 → %d, size 100 → %d", allOps, counts[1], counts[100])
		if counts[1] != want[allOps] || counts[100] != want[allOps] {
			t.Errorf("all operations %v: %d statements for a page of 1, %d for a page of 100, want %d",
				allOps, counts[1], counts[100], want[allOps])
		}
	}
}

// TestRuntimesPlanUsesIndexes EXPLAINs the statements over 10,000 generated
// instances: filtering by account must not scan the instances table, the
// count must not read operations, and the page must probe operations only
// for the rows it returns (LATERALs after LIMIT/OFFSET), whatever the page
// number. docs/runtimes-internals.md quotes the same statements' plans on 100,000
// instances (go run ./testing/runtimesload -explain).
func TestRuntimesPlanUsesIndexes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	for _, sql := range []string{
		`INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id, user_id, service_id, plan_id,
			plan_name, platform_region, provider, provider_region, created_at, state, shoot_name, kyma_state, expired_at)
		SELECT 'inst-'||g, 'rt-'||g, 'ga-'||(g % 500), 'sa-'||g, 'u', 'svc', 'p', 'azure', 'cf-eu10', 'azure',
			'westeurope', now() - g * interval '1 minute',
			CASE WHEN g % 20 = 0 THEN 'failed' WHEN g % 20 = 1 THEN 'provisioning' ELSE 'succeeded' END, 'c-'||g,
			CASE WHEN g % 20 = 1 THEN NULL WHEN g % 50 = 7 THEN 'Error' ELSE 'Ready' END,
			CASE WHEN g % 50 = 3 THEN now() END
		FROM generate_series(1, 10000) g`,
		`INSERT INTO operations (operation_id, instance_id, type, state, deadline, data, created_at)
		SELECT 'op-'||g, 'inst-'||g, 'provision', 'succeeded', now(), jsonb_build_object('shootName', 'c-'||g),
			now() - g * interval '1 minute' FROM generate_series(1, 10000) g`,
		`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id, plan_name,
			platform_region, provider, provider_region, last_deprovisioning_id, instance_created_at, deprovisioning_started_at)
		SELECT 'old-'||g, 'rt-old-'||g, 'ga-'||(g % 500), 'sa', 'p', 'azure', 'cf-eu10', 'azure', 'westeurope', 'd',
			now() - g * interval '1 minute', now() FROM generate_series(1, 2000) g`,
		// VACUUM as well: index-only scans (a page by number's boundary)
		// read the table only for pages not marked all-visible, which
		// autovacuum keeps marked in production. Here other tests'
		// transactions in the shared cluster may keep VACUUM from marking
		// them, so this test checks the plans' shape, not heap fetches.
		`VACUUM (ANALYZE) instances, operations, instances_archive`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	explain := func(name, sql string, args []any) string {
		t.Helper()
		rows, _ := pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+sql, args...)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: EXPLAIN: %v", name, err)
		}
		return strings.Join(lines, "\n")
	}
	// The listing's own scan of instances (alias i) must use an index.
	seqScan := regexp.MustCompile(`Seq Scan on instances i\b`)
	// Every node reading instances, and how many rows it returned.
	instancesRows := regexp.MustCompile(`on instances \w+ \(actual rows=(\d+) loops=\d+\)`)
	// An operations probe's line and, on the next, how often it ran.
	// (An archived row's probes are never executed.)
	probeLoops := regexp.MustCompile(`on operations o\S* \((?:actual rows=\d+ loops=(\d+)|never executed)\)`)
	cases := []struct {
		name string
		q    storage.RuntimeQuery
		// keysOnly: a page by number whose boundary must be an
		// index-only scan, reading whole rows for the page alone.
		keysOnly bool
	}{
		{name: "account", q: storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-7"}, PageSize: 100}},
		{name: "account all states", q: storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-7", "ga-8"}, PageSize: 100, States: storage.RuntimeStates}},
		{name: "no filter", q: storage.RuntimeQuery{PageSize: 100}},
		{name: "no filter page 30", q: storage.RuntimeQuery{PageSize: 100, Page: 30}, keysOnly: true},
		{name: "state failed", q: storage.RuntimeQuery{PageSize: 100, States: []storage.RuntimeState{"failed"}}},
		{name: "all states page 30", q: storage.RuntimeQuery{PageSize: 100, Page: 30, States: storage.RuntimeStates}, keysOnly: true},
		{name: "shoot", q: storage.RuntimeQuery{PageSize: 100, Shoots: []string{"c-77"}}},
		{name: "deprovisioned", q: storage.RuntimeQuery{PageSize: 100, States: []storage.RuntimeState{"deprovisioned"}}},
		{name: "deprovisioned page 10", q: storage.RuntimeQuery{PageSize: 100, Page: 10, States: []storage.RuntimeState{"deprovisioned"}}, keysOnly: true},
		{name: "failed page 4", q: storage.RuntimeQuery{PageSize: 100, Page: 4, States: []storage.RuntimeState{"failed"}}},
		{name: "no filter page 90", q: storage.RuntimeQuery{PageSize: 100, Page: 90}, keysOnly: true},
		{name: "default states page 60 (from the end)", q: storage.RuntimeQuery{PageSize: 100, Page: 60, States: storage.DefaultRuntimeStates}, keysOnly: true},
		{name: "all states page 110", q: storage.RuntimeQuery{PageSize: 100, Page: 110, States: storage.RuntimeStates}, keysOnly: true},
		// 200 runtimes in Error among 10,000: read from instances_kyma_state_created_idx, also for their count.
		{name: "kyma_state Error", q: storage.RuntimeQuery{PageSize: 100, KymaStates: []string{"Error"}}},
		{name: "kyma_state Error page 2", q: storage.RuntimeQuery{PageSize: 100, Page: 2, KymaStates: []string{"Error"}}},
		{name: "kyma_state Error, all states", q: storage.RuntimeQuery{PageSize: 100, KymaStates: []string{"Error"}, States: storage.RuntimeStates}},
		{name: "kyma_state Error and Warning", q: storage.RuntimeQuery{PageSize: 100, KymaStates: []string{"Error", "Warning"}}},
		// 200 expired runtimes among 10,000 (upstream's expired=true):
		// read from the partial instances_expired_created_idx, also for
		// their count.
		{name: "expired", q: storage.RuntimeQuery{PageSize: 100, Expired: true}},
		{name: "expired page 2, all states", q: storage.RuntimeQuery{PageSize: 100, Page: 2, Expired: true, States: storage.RuntimeStates}},
	}
	// A node reading whole rows of instances or the archive (not an
	// index-only scan of keys), and how many rows it returned.
	rowReads := regexp.MustCompile(`(?:Index Scan|Bitmap Heap Scan|Seq Scan) (?:using \w+ )?on (instances(?:_archive)? \w+) \(actual rows=(\d+) loops=\d+\)`)
	for _, tc := range cases {
		// As Runtimes runs them: the count first, then the page built
		// with its total (a deep page's boundary from the end).
		count, countArgs := storage.RuntimesCountSQL(tc.q)
		total, err := storage.ScanRuntimesCount(pool.QueryRow(ctx, count, countArgs...))
		if err != nil {
			t.Fatalf("%s: count: %v", tc.name, err)
		}
		page, pageArgs := storage.RuntimesPageSQL(tc.q, total)
		plan := explain(tc.name, page, pageArgs)
		t.Logf("%s:\n%s", tc.name, plan)
		if seqScan.MatchString(plan) {
			t.Errorf("%s: plan scans instances:\n%s", tc.name, plan)
		}
		probes := probeLoops.FindAllStringSubmatch(plan, -1)
		if len(probes) == 0 {
			t.Errorf("%s: no operations probe found in the plan", tc.name)
		}
		for _, m := range probes {
			if n, _ := strconv.Atoi(m[1]); n > tc.q.PageSize+1 {
				t.Errorf("%s: operations probed %d times for a page of %d: the LATERALs run before the LIMIT\n%s",
					tc.name, n, tc.q.PageSize, plan)
			}
		}
		// A page by number skips its offset on keys only (index-only
		// scans) and reads whole rows for the page alone, wherever it is.
		// (With 500 failed instances spread over the table and no
		// all-visible pages, the planner may rightly prefer a bitmap scan
		// and a sort of the 500 for "failed page 4"; its rows are checked
		// by TestRuntimesPageNumbersMatchFullListing.)
		if tc.keysOnly {
			for _, m := range rowReads.FindAllStringSubmatch(plan, -1) {
				if n, _ := strconv.Atoi(m[2]); n > tc.q.PageSize+1 {
					t.Errorf("%s: reads %d rows of %s for a page of %d: the offset is skipped on rows, not keys\n%s",
						tc.name, n, m[1], tc.q.PageSize, plan)
				}
			}
			if !strings.Contains(plan, "Index Only Scan") {
				t.Errorf("%s: no index-only scan for the page's boundary:\n%s", tc.name, plan)
			}
		}
		countPlan := explain(tc.name+" count", count, countArgs)
		if strings.Contains(countPlan, "operations") {
			t.Errorf("%s: count reads operations:\n%s", tc.name, countPlan)
		}
		// Without an account, subaccount, instance, runtime or shoot
		// filter the count is a sum of the kept counts: it reads neither
		// instances nor the archive, whatever the fleet's size.
		selective := len(tc.q.GlobalAccountIDs)+len(tc.q.Shoots) > 0 || tc.q.Expired
		// A page by number sums them by creation month.
		kept := "on runtime_counts"
		if tc.q.Page > 1 {
			kept = "on runtime_month_counts"
		}
		if !selective && (!strings.Contains(countPlan, kept) || strings.Contains(countPlan, "on instances")) {
			t.Errorf("%s: the count does not sum %s alone:\n%s", tc.name, strings.TrimPrefix(kept, "on "), countPlan)
		}
		if tc.q.Expired {
			for _, p := range []string{plan, countPlan} {
				if !strings.Contains(p, "instances_expired_created_idx") || strings.Contains(p, "Seq Scan on instances") {
					t.Errorf("%s: the expiry filter does not read its index:\n%s", tc.name, p)
				}
			}
			for _, m := range rowReads.FindAllStringSubmatch(plan, -1) {
				if n, _ := strconv.Atoi(m[2]); n > 201 {
					t.Errorf("%s: reads %d rows of %s for 200 expired runtimes:\n%s", tc.name, n, m[1], plan)
				}
			}
		}
		if len(tc.q.KymaStates) > 0 {
			if !strings.Contains(plan, "instances_kyma_state_created_idx") {
				t.Errorf("%s: the Kyma state filter does not read its index:\n%s", tc.name, plan)
			}
			for _, m := range rowReads.FindAllStringSubmatch(plan, -1) {
				if n, _ := strconv.Atoi(m[2]); n > 201 {
					t.Errorf("%s: reads %d rows of %s for 200 runtimes in Error:\n%s", tc.name, n, m[1], plan)
				}
			}
		}
		// No live instance is deprovisioned (ArchiveAndRemove), and the
		// archive is read alone: a listing of deprovisioned runtimes reads
		// no row of instances, neither for its page nor for its count.
		// (Before, both looked up each archived row among the live ones,
		// and the count merged every live instance's key.)
		if slices.Equal(tc.q.States, []storage.RuntimeState{storage.RuntimeDeprovisioned}) {
			for _, p := range []string{plan, countPlan} {
				for _, m := range instancesRows.FindAllStringSubmatch(p, -1) {
					if m[1] != "0" {
						t.Errorf("%s: reads %s rows of instances:\n%s", tc.name, m[1], p)
					}
				}
			}
		}
	}
}

// TestRuntimesPageNumbersMatchFullListing checks that a page by number (a
// deferred join: the boundary key found over keys only, then a keyset page
// from it) is the corresponding slice of the full listing, for filters that
// take each form of the boundary: no state filter and the default "all but
// deprovisioned" (an anti-join), one state, several states, all states (the
// live and archive branches merged), plan and region together (an index
// intersection) and a selective filter; for full and last partial pages and
// for pages beyond the end, which are empty.
func TestRuntimesPageNumbersMatchFullListing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var seed []seedRuntime
	plans := []string{"azure", "aws", "gcp"}
	regions := []string{"westeurope", "eastus"}
	opsByKind := [][]seedOp{{provOK}, {provRun}, {provFailed}, {provOK, deprovRun}, {provOK, updateOK}}
	for i := range 47 {
		r := seedRuntime{id: fmt.Sprintf("inst-%02d", i), account: fmt.Sprintf("ga-%d", i%3), subaccount: "sa",
			region: regions[i%2], plan: plans[i%3], ops: opsByKind[i%5]}
		switch {
		case i%4 == 1:
			r.archived = true // archived rows interleave with live ones
		case i%13 == 6:
			r.state = storage.RuntimeSuspended
		case i == 10 || i == 30:
			// Live and deprovisioned: valid, though no pipeline leaves an
			// instance so. The default listing leaves it out (the
			// boundary's anti-join), state=all lists it.
			r.state = storage.RuntimeDeprovisioned
		}
		seed = append(seed, r)
	}
	f.seedRuntimes(seed)
	// Ties on created_at, across the two tables too: the ID breaks them.
	f.exec(`UPDATE instances SET created_at = $1 WHERE instance_id IN ('inst-02', 'inst-03', 'inst-04', 'inst-06')`, epoch.Add(time.Hour))
	f.exec(`UPDATE instances_archive SET instance_created_at = $1 WHERE instance_id IN ('inst-05', 'inst-01')`, epoch.Add(time.Hour))
	cases := append(pageNumberFilters(),
		namedQuery{"state=all&region=eastus", storage.RuntimeQuery{States: storage.RuntimeStates, Regions: []string{"eastus"}}},
		namedQuery{"state=all&plan=gcp&region=eastus", storage.RuntimeQuery{States: storage.RuntimeStates, Plans: []string{"gcp"}, Regions: []string{"eastus"}}},
		namedQuery{"account", storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-1"}}},
		namedQuery{"account state=all", storage.RuntimeQuery{GlobalAccountIDs: []string{"ga-1", "ga-2"}, States: storage.RuntimeStates}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := tc.q
			q.PageSize = 1000
			full, err := f.store.Runtimes(f.ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(full.Runtimes) < 4 || full.Total != len(full.Runtimes) || full.Next != nil {
				t.Fatalf("full listing: %d rows, total %d, next %v", len(full.Runtimes), full.Total, full.Next)
			}
			for _, size := range []int{1, 3, 7} {
				pages := (full.Total + size - 1) / size
				for n := 1; n <= pages+2; n++ {
					q := tc.q
					q.Page, q.PageSize = n, size
					p, err := f.store.Runtimes(f.ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					lo, hi := min(full.Total, (n-1)*size), min(full.Total, n*size)
					want := full.Runtimes[lo:hi]
					if !reflect.DeepEqual(p.Runtimes, want) && (len(want) > 0 || len(p.Runtimes) > 0) {
						t.Fatalf("page %d of %d: got %v, want %v", n, size, ids(p), ids(storage.RuntimePage{Runtimes: want}))
					}
					if p.Total != full.Total {
						t.Fatalf("page %d of %d: total %d, want %d", n, size, p.Total, full.Total)
					}
					switch {
					case hi < full.Total:
						if c := want[len(want)-1].Cursor(); p.Next == nil || !p.Next.CreatedAt.Equal(c.CreatedAt) || p.Next.InstanceID != c.InstanceID {
							t.Fatalf("page %d of %d: next %v, want %v", n, size, p.Next, c)
						}
					case p.Next != nil:
						t.Fatalf("page %d of %d (last or beyond): next %v", n, size, p.Next)
					}
				}
			}
		})
	}
}

// namedQuery is a listing query and what a failure calls it.
type namedQuery struct {
	name string
	q    storage.RuntimeQuery
}

// pageNumberFilters are filters that take each form of a page's boundary:
// no state filter and the default "all but deprovisioned" (an anti-join),
// one state, several states, all states (the live and archive branches
// merged), all but one other state, a plan, and plan and region together
// (one index) or with a state (an index intersection).
func pageNumberFilters() []namedQuery {
	allBut := func(state storage.RuntimeState) []storage.RuntimeState {
		var out []storage.RuntimeState
		for _, s := range storage.RuntimeStates {
			if s != state {
				out = append(out, s)
			}
		}
		return out
	}
	return []namedQuery{
		{"default states", storage.RuntimeQuery{}},
		{"state=all", storage.RuntimeQuery{States: storage.RuntimeStates}},
		{"state=deprovisioned", storage.RuntimeQuery{States: []storage.RuntimeState{storage.RuntimeDeprovisioned}}},
		{"state=succeeded", storage.RuntimeQuery{States: []storage.RuntimeState{storage.RuntimeSucceeded}}},
		{"state=failed,provisioning", storage.RuntimeQuery{States: []storage.RuntimeState{storage.RuntimeFailed, storage.RuntimeProvisioning}}},
		{"all but failed", storage.RuntimeQuery{States: allBut(storage.RuntimeFailed)}},
		{"plan=azure", storage.RuntimeQuery{Plans: []string{"azure"}}},
		{"plan=azure&region=westeurope", storage.RuntimeQuery{Plans: []string{"azure"}, Regions: []string{"westeurope"}}},
		{"state=succeeded&plan=azure,aws", storage.RuntimeQuery{States: []storage.RuntimeState{storage.RuntimeSucceeded}, Plans: []string{"azure", "aws"}}},
	}
}
