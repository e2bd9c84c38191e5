package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestMigrationLockExcludesASecondMigrator: while one migrator (another
// replica's init container) holds keb's migration lock, `keb migrate up`
// waits for it and applies nothing; once it is released, it applies what is
// missing.
func TestMigrationLockExcludesASecondMigrator(t *testing.T) {
	ctx, pool, head := oneMigrationBehind(t)
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(hashtext('keb-migrate-up'))`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		applied []int64
		err     error
	}
	done := make(chan result, 1)
	busy := make(chan struct{}, 1)
	go func() {
		applied, err := storage.MigrateUpWith(ctx, pool, storage.MigrateOptions{OnMigrationLockBusy: func() {
			select {
			case busy <- struct{}{}:
			default:
			}
		}})
		done <- result{applied, err}
	}()
	select {
	case <-busy:
	case res := <-done:
		t.Fatalf("MigrateUp ended (%v %v) while another migrator held the lock", res.applied, res.err)
	}
	if st := migrationState(t, pool); st.Current != head-1 {
		t.Fatalf("schema version %d while another migrator holds the lock, want %d", st.Current, head-1)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('keb-migrate-up'))`); err != nil {
		t.Fatal(err)
	}
	holder.Release()
	res := <-done
	if res.err != nil || !slices.Equal(res.applied, []int64{head}) {
		t.Fatalf("MigrateUp after the lock's release: %v %v, want [%d]", res.applied, res.err, head)
	}
}

// TestMigrationGivesUpLocksAndRetries: a migration whose tables a long
// transaction holds gives up its lock request after
// lock_timeout (so that the replicas' queries do not queue behind it),
// tries again, and is applied once the transaction ends. The readers
// working meanwhile see no error.
func TestMigrationGivesUpLocksAndRetries(t *testing.T) {
	ctx, pool, head := oneMigrationBehind(t)
	// Every migration records itself in goose's version table: a
	// transaction holding it in SHARE mode (which readers pass) makes any
	// migration wait, whatever it does.
	long, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Rollback(context.Background())
	if _, err := long.Exec(ctx, `LOCK TABLE goose_db_version, instances IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	var readErrs []error
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := pool.Exec(ctx, `SELECT instance_id, state FROM instances LIMIT 1`); err != nil {
				readErrs = append(readErrs, err)
			}
			reads.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
	})
	gaveUp := make(chan error, 100)
	done := make(chan error, 1)
	go func() {
		_, err := storage.MigrateUpWith(ctx, pool, storage.MigrateOptions{LockTimeout: 100 * time.Millisecond,
			OnLockTimeout: func(err error) { gaveUp <- err }})
		done <- err
	}()
	select {
	case err := <-gaveUp:
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
			t.Fatalf("the migration gave up with %v, want lock_not_available (55P03)", err)
		}
	case err := <-done:
		t.Fatalf("the migration ended (%v) while a transaction held its table", err)
	}
	if err := long.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the migration after the transaction ended: %v", err)
	}
	close(stop)
	wg.Wait()
	if st := migrationState(t, pool); st.Current != head {
		t.Errorf("schema version %d, want %d", st.Current, head)
	}
	if len(readErrs) > 0 || reads.Load() == 0 {
		t.Errorf("%d reads while migrating, errors: %v", reads.Load(), readErrs)
	}
}

// contractSteps are the migrations allowed to remove a column, each the
// contract step of an expand-then-contract change: the column was no longer
// read or written by the release before it.
var contractSteps = map[int64][]string{
	// deleted_at was never written (00006 moved deprovisioned instances to
	// instances_archive); the release before 8 wrote and read none of it.
	8: {"instances.deleted_at"},
}

// TestMigrationsKeepThePreviousSchemaWorking replays every migration M of
// this repository: the database at M-1, a load reading every column of
// every table (what the release before M may read) while M is applied, and
// after it. A migration may not remove what the previous release reads
// (unless listed as a contract step), nor add a column the previous
// release's inserts would fail on (NOT NULL without a default).
func TestMigrationsKeepThePreviousSchemaWorking(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	head := migrationState(t, pool).Head
	for migrationState(t, pool).Current > 1 {
		if _, err := storage.MigrateDown(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	for m := int64(2); m <= head; m++ {
		before := tableColumns(t, pool)
		var reads []string
		for table, cols := range before {
			var keep []string
			for _, c := range cols {
				if !slices.Contains(contractSteps[m], table+"."+c.name) {
					keep = append(keep, pgx.Identifier{c.name}.Sanitize())
				}
			}
			reads = append(reads, fmt.Sprintf("SELECT %s FROM %s LIMIT 1", strings.Join(keep, ", "), pgx.Identifier{table}.Sanitize()))
		}
		slices.Sort(reads)
		stop := make(chan struct{})
		var mu sync.Mutex
		var failed []string
		read := func() {
			for _, q := range reads {
				if _, err := pool.Exec(ctx, q); err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%s: %v", q, err))
					mu.Unlock()
				}
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					read()
				}
			}
		})
		applied, err := storage.MigrateUpWith(ctx, pool, storage.MigrateOptions{To: m})
		close(stop)
		wg.Wait()
		if err != nil || !slices.Equal(applied, []int64{m}) {
			t.Fatalf("migrating to %d: %v %v", m, applied, err)
		}
		read() // and once more against M
		for _, f := range failed {
			t.Errorf("migration %d broke a read of the previous schema: %s", m, f)
		}
		after := tableColumns(t, pool)
		for table, cols := range after {
			if _, existed := before[table]; !existed {
				continue
			}
			for _, c := range cols {
				if !slices.ContainsFunc(before[table], func(b column) bool { return b.name == c.name }) && c.required {
					t.Errorf("migration %d adds %s.%s NOT NULL without a default: the previous release's inserts fail", m, table, c.name)
				}
			}
		}
	}
}

type column struct {
	name     string
	required bool // NOT NULL without a default
}

// tableColumns lists keb's tables (not River's or goose's) and their columns.
func tableColumns(t *testing.T, pool *pgxpool.Pool) map[string][]column {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT table_name, column_name, is_nullable = 'NO' AND column_default IS NULL
		FROM information_schema.columns WHERE table_schema = current_schema()
		AND table_name NOT LIKE 'river%' AND table_name <> 'goose_db_version' ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]column{}
	for rows.Next() {
		var table string
		var c column
		if err := rows.Scan(&table, &c.name, &c.required); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// oneMigrationBehind is a test's database with every migration but the last.
func oneMigrationBehind(t *testing.T) (context.Context, *pgxpool.Pool, int64) {
	t.Helper()
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	head := migrationState(t, pool).Head
	if _, err := storage.MigrateDown(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return ctx, pool, head
}

func migrationState(t *testing.T, pool *pgxpool.Pool) storage.MigrationState {
	t.Helper()
	st, err := storage.Migrations(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
