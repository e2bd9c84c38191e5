package storage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3/lock"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/migrations"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// headVersion is the highest embedded migration, read from the files so that
// adding a migration does not break this test.
func headVersion(t *testing.T) int64 {
	t.Helper()
	versions := migrationVersions(t)
	return versions[len(versions)-1]
}

// migrationVersions lists the embedded migrations' versions in order.
// Numbers are handed to parallel branches, so they may have gaps.
func migrationVersions(t *testing.T) []int64 {
	t.Helper()
	entries, err := migrations.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var versions []int64
	for _, e := range entries {
		var v int64
		for _, r := range e.Name() {
			if r < '0' || r > '9' {
				break
			}
			v = v*10 + int64(r-'0')
		}
		if v > 0 {
			versions = append(versions, v)
		}
	}
	slices.Sort(versions)
	return versions
}

func tableExists(t *testing.T, pool *pgxpool.Pool, name string) bool {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(testCtx(t), `SELECT to_regclass($1) IS NOT NULL`, "public."+name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestMigrationsUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t) // migrated to head by pgtest, with storage.MigrateUp
	head := headVersion(t)

	st, err := storage.Migrations(ctx, pool)
	if err != nil {
		t.Fatalf("Migrations: %v", err)
	}
	if !st.AtHead() || st.Current != head || st.Head != head {
		t.Fatalf("migrated database reports %+v (at head %v), want current = head = %d", st, st.AtHead(), head)
	}

	// Up at head applies nothing.
	applied, err := storage.MigrateUp(ctx, pool)
	if err != nil || len(applied) != 0 {
		t.Fatalf("MigrateUp at head applied %v, %v; want nothing", applied, err)
	}

	// Roll everything back, one migration at a time.
	versions := migrationVersions(t)
	for i := len(versions) - 1; i >= 0; i-- {
		want := versions[i]
		v, err := storage.MigrateDown(ctx, pool)
		if err != nil || v != want {
			t.Fatalf("MigrateDown = %d, %v; want %d", v, err, want)
		}
		st, err := storage.Migrations(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		var below int64
		if i > 0 {
			below = versions[i-1]
		}
		if st.AtHead() || st.Current != below || st.Head != head {
			t.Fatalf("after rolling back %d: %+v (at head %v)", want, st, st.AtHead())
		}
	}
	for _, table := range []string{"instances", "operations"} {
		if tableExists(t, pool, table) {
			t.Errorf("table %s still exists with every migration rolled back", table)
		}
	}
	// Down with nothing applied is not an error.
	if v, err := storage.MigrateDown(ctx, pool); err != nil || v != 0 {
		t.Errorf("MigrateDown on an empty schema = %d, %v; want 0, nil", v, err)
	}

	// Up from empty applies every migration, in order, once.
	applied, err = storage.MigrateUp(ctx, pool)
	if err != nil {
		t.Fatalf("MigrateUp from empty: %v", err)
	}
	if !slices.Equal(applied, migrationVersions(t)) {
		t.Errorf("MigrateUp from empty applied %v, want %v", applied, migrationVersions(t))
	}
	if applied, err := storage.MigrateUp(ctx, pool); err != nil || len(applied) != 0 {
		t.Errorf("second MigrateUp applied %v, %v; want nothing", applied, err)
	}
	st, err = storage.Migrations(ctx, pool)
	if err != nil || !st.AtHead() {
		t.Errorf("after MigrateUp: %+v, %v; want at head", st, err)
	}
	for _, table := range []string{"instances", "operations"} {
		if !tableExists(t, pool, table) {
			t.Errorf("table %s missing after MigrateUp", table)
		}
	}

	// The restored schema works.
	f := &fixture{t: t, ctx: ctx, pool: pool, cipher: mustCipher(t, b64KeyA)}
	f.store = storage.NewStore(pool, f.cipher, nil)
	f.provision("inst-1", "ga-1", "trial", "op-1")
	if err := f.store.CreateProvisioning(ctx, newInstance("inst-2", "ga-1", "trial"),
		newOperation("op-2", "inst-2", storage.OperationTypeProvision)); err == nil {
		t.Error("restored schema lost the one-per-global-account index")
	}
}

func TestMigrationsReportOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	head := headVersion(t)
	// pgtest databases come migrated; roll them back to what a new database is.
	for range head {
		if _, err := storage.MigrateDown(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `DROP TABLE goose_db_version`); err != nil {
		t.Fatalf("dropping goose's version table: %v", err)
	}
	st, err := storage.Migrations(ctx, pool)
	if err != nil {
		t.Fatalf("Migrations on a database never migrated: %v", err)
	}
	if st.Current != 0 || st.Head != head || st.AtHead() {
		t.Errorf("never-migrated database reports %+v (at head %v), want current 0, head %d", st, st.AtHead(), head)
	}
	applied, err := storage.MigrateUp(ctx, pool)
	if err != nil || len(applied) != len(migrationVersions(t)) {
		t.Fatalf("MigrateUp = %v, %v", applied, err)
	}
	if applied, err := storage.MigrateUp(ctx, pool); err != nil || len(applied) != 0 {
		t.Errorf("second MigrateUp applied %v, %v; want nothing", applied, err)
	}
}

// TestReadingTheSchemaVersionTakesNoMigrationLock: readiness reads the
// schema version every few seconds on every replica, within 3 s; a
// migration, or another replica, holding goose's lock must not make it wait
// (goose takes that lock for reading the version too, and retries every 5 s:
// a database that answers read as one that did not).
func TestReadingTheSchemaVersionTakesNoMigrationLock(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, lock.DefaultLockID); err != nil {
		t.Fatalf("taking the migration lock: %v", err)
	}
	defer func() { _, _ = holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lock.DefaultLockID) }()

	cctx, cancel := context.WithTimeout(ctx, 3*time.Second) // httpapi.CheckTimeout
	defer cancel()
	st, err := storage.Migrations(cctx, pool)
	if err != nil || !st.AtHead() {
		t.Errorf("reading the schema version while the migration lock is held: %+v, %v; want at head at once", st, err)
	}
}
