package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestEveryMigrationRunsWithTheLimits applies every migration to an empty
// database and sees each statement they send: every one runs on a
// connection opened with keb's lock_timeout and statement_timeout (the
// migration files set none of their own: migrations/lint_test.go), and
// every migration was applied through them.
func TestEveryMigrationRunsWithTheLimits(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	for range headVersion(t) {
		if _, err := storage.MigrateDown(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var unlimited []string
	recorded := map[int64]bool{}
	opts := storage.MigrateOptions{LockTimeout: 3 * time.Second, StatementTimeout: 7 * time.Minute}
	applied, err := storage.MigrateUpObserved(ctx, pool, opts, func(sql string, args []any, params map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		if params["lock_timeout"] != "3000" || params["statement_timeout"] != "420000" {
			unlimited = append(unlimited, fmt.Sprintf("%.60q with lock_timeout %q, statement_timeout %q", sql, params["lock_timeout"], params["statement_timeout"]))
		}
		if strings.HasPrefix(sql, "INSERT INTO goose_db_version") && len(args) > 0 {
			if v, ok := args[0].(int64); ok {
				recorded[v] = true
			}
		}
	})
	if err != nil || !slices.Equal(applied, migrationVersions(t)) {
		t.Fatalf("MigrateUp = %v, %v; want %v", applied, err, migrationVersions(t))
	}
	for _, s := range unlimited[:min(len(unlimited), 10)] {
		t.Errorf("a migration statement ran without keb's limits: %s", s)
	}
	for _, v := range migrationVersions(t) {
		if !recorded[v] {
			t.Errorf("migration %d was not recorded through a limited connection", v)
		}
	}
}

// indexMigration is the migration that builds an index concurrently
// (00022, the index of 00020's column), and its index.
const (
	indexMigration = 22
	concurrentIdx  = "instances_subscription_secret_name_idx"
)

// TestFailedConcurrentIndexBuildIsRebuilt: a concurrent index build that
// gives up waiting for an older writing transaction (lock_timeout) leaves an
// INVALID index; the migrator's next try drops it and builds the index
// again, valid, without ever locking out the writers.
func TestFailedConcurrentIndexBuildIsRebuilt(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	for migrationState(t, pool).Current >= indexMigration {
		if _, err := storage.MigrateDown(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	if exists, _ := indexState(t, pool); exists {
		t.Fatalf("index %s exists below migration %d", concurrentIdx, indexMigration)
	}
	// A writer's transaction, open before the build: CREATE INDEX
	// CONCURRENTLY waits for it after committing the index's catalog entry.
	writer, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback(context.Background())
	if _, err := writer.Exec(ctx, `LOCK TABLE instances IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var leftover []string
	var writes []error
	done := make(chan error, 1)
	gaveUp := make(chan struct{}, 1)
	go func() {
		_, err := storage.MigrateUpWith(ctx, pool, storage.MigrateOptions{To: indexMigration, LockTimeout: 200 * time.Millisecond,
			OnLockTimeout: func(err error) {
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
					leftover = append(leftover, fmt.Sprintf("gave up with %v, want lock_not_available", err))
				}
				select {
				case gaveUp <- struct{}{}:
					// The failed build's leftover, seen before the next try.
					if exists, valid, err := readIndexState(pool); err != nil || !exists || valid {
						leftover = append(leftover, fmt.Sprintf("after the failed build: exists %v, valid %v (%v); want an invalid leftover", exists, valid, err))
					}
					// Writers are not locked out meanwhile.
					_, err := pool.Exec(ctx, `UPDATE instances SET updated_at = updated_at WHERE false`)
					writes = append(writes, err)
				default:
				}
			}})
		done <- err
	}()
	select {
	case <-gaveUp:
	case err := <-done:
		t.Fatalf("the migration ended (%v) while an older writer's transaction was open", err)
	}
	if err := writer.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the migration after the writer ended: %v", err)
	}
	for _, l := range leftover {
		t.Error(l)
	}
	if err := errors.Join(writes...); err != nil {
		t.Errorf("a write while the index was being built: %v", err)
	}
	if exists, valid := indexState(t, pool); !exists || !valid {
		t.Errorf("index %s after the migration: exists %v, valid %v; want a valid one", concurrentIdx, exists, valid)
	}

	// A valid index is never dropped, and a second run changes nothing.
	if err := storage.DropFailedIndexBuilds(ctx, pool, []string{concurrentIdx}); err != nil {
		t.Fatal(err)
	}
	if exists, valid := indexState(t, pool); !exists || !valid {
		t.Errorf("DropFailedIndexBuilds touched the valid index: exists %v, valid %v", exists, valid)
	}
	names, err := storage.ConcurrentIndexes()
	if err != nil || !slices.Contains(names, concurrentIdx) {
		t.Errorf("ConcurrentIndexes = %v, %v; want %s among them", names, err, concurrentIdx)
	}
}

// indexState reports whether the concurrent index exists and is valid.
func indexState(t *testing.T, pool *pgxpool.Pool) (exists, valid bool) {
	t.Helper()
	exists, valid, err := readIndexState(pool)
	if err != nil {
		t.Fatal(err)
	}
	return exists, valid
}

func readIndexState(pool *pgxpool.Pool) (exists, valid bool, err error) {
	err = pool.QueryRow(context.Background(), `SELECT count(*) > 0, coalesce(bool_and(i.indisvalid), false)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`, concurrentIdx).Scan(&exists, &valid)
	return exists, valid, err
}
