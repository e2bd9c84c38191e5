package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestLoadIsConsistent loads a small database and checks that what the
// loader writes on instances is what the store would have written with the
// loaded operations, so that measurements on it mean something.
func TestLoadIsConsistent(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := loadDB(ctx, dbURL, 3000, 300); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	count := func(what, sql string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return n
	}
	// The state the newest operation implies (migration 00005's rules, with
	// Store.Finish's suspension for a finished temporary deprovisioning).
	if n := count("state mismatches", `SELECT count(*) FROM instances i
		CROSS JOIN LATERAL (SELECT o.type, o.state, o.temporary FROM operations o WHERE o.instance_id = i.instance_id
			ORDER BY o.created_at DESC, o.operation_id DESC LIMIT 1) lo
		WHERE i.state <> CASE
			WHEN lo.type = 'deprovision' AND lo.state = 'succeeded' AND lo.temporary THEN 'suspended'
			WHEN lo.type = 'deprovision' AND lo.state = 'succeeded' THEN 'deprovisioned'
			WHEN lo.state = 'failed' THEN 'failed'
			WHEN lo.type = 'provision' AND lo.state = 'in progress' THEN 'provisioning'
			WHEN lo.type = 'deprovision' AND lo.state = 'in progress' THEN 'deprovisioning'
			ELSE 'succeeded' END`); n != 0 {
		t.Errorf("%d instances have a state their operations do not imply", n)
	}
	if n := count("shoot mismatches", `SELECT count(*) FROM instances i WHERE i.shoot_name IS DISTINCT FROM
		(SELECT o.data ->> 'shootName' FROM operations o WHERE o.instance_id = i.instance_id AND o.type = 'provision'
		ORDER BY o.created_at DESC LIMIT 1)`); n != 0 {
		t.Errorf("%d instances have a shoot name their provisioning does not", n)
	}
	if n := count("expired", `SELECT count(*) FROM instances WHERE expired_at IS NOT NULL`); n == 0 {
		t.Errorf("no expired trial loaded")
	}
	if n := count("bad expiry", `SELECT count(*) FROM instances WHERE (expired_at IS NOT NULL) <> (state = 'suspended')
		OR (expired_at IS NOT NULL AND plan_name <> 'trial')`); n != 0 {
		t.Errorf("%d instances are expired but not suspended trials, or the reverse", n)
	}
	if n := count("resolved", `SELECT count(*) FROM instances WHERE (resolved_parameters = '{}') =
		EXISTS (SELECT 1 FROM operations o WHERE o.instance_id = instances.instance_id AND o.type = 'provision'
		AND o.state = 'succeeded')`); n != 0 {
		t.Errorf("%d instances have resolved parameters without a successful provisioning, or the reverse", n)
	}

	// The listing over the loaded data: every state's count adds up.
	store := storage.NewStore(pool, nil, nil)
	total := 0
	for _, state := range storage.RuntimeStates {
		p, err := store.Runtimes(ctx, storage.RuntimeQuery{States: []storage.RuntimeState{state}, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		total += p.Total
	}
	// An instance is in one table only, as Store.ArchiveAndRemove leaves
	// it: the listing reads the archive without excluding live instances.
	if n := count("in both", `SELECT count(*) FROM instances JOIN instances_archive USING (instance_id)`); n != 0 {
		t.Errorf("%d instances are in both tables", n)
	}
	if n := count("deprovisioning", `SELECT count(*) FROM instances WHERE state = 'deprovisioning'`); n == 0 {
		t.Errorf("no deprovisioning instance loaded")
	}
	if want := count("all", `SELECT (SELECT count(*) FROM instances) + (SELECT count(*) FROM instances_archive)`); total != want || want != 3300 {
		t.Errorf("states add up to %d, want %d (3,000 live + 300 archived)", total, want)
	}

	for _, filter := range []string{"-", idPrefix + "ga-007", "state=suspended&plan=trial", "state=all&region=eastus"} {
		if err := explainPage(ctx, dbURL, filter); err != nil {
			t.Errorf("-explain %s: %v", filter, err)
		}
	}
}
