package pgtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestNewPoolGivesIsolatedDatabases(t *testing.T) {
	t.Parallel()
	a := timed(t, "NewPool", func() *pgxpool.Pool { return pgtest.NewPool(t) })
	b := timed(t, "NewPool", func() *pgxpool.Pool { return pgtest.NewPool(t) })

	if dbOf(t, a) == dbOf(t, b) {
		t.Fatalf("both pools use database %s", dbOf(t, a))
	}
	if _, err := a.Exec(ctx(t), "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	var inA, inB bool
	query(t, a, "SELECT to_regclass('only_in_a') IS NOT NULL", &inA)
	query(t, b, "SELECT to_regclass('only_in_a') IS NOT NULL", &inB)
	if !inA || inB {
		t.Fatalf("table created in a: visible in a=%v, in b=%v", inA, inB)
	}
}

func TestDatabasesAreMigrated(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, table := range []string{"instances", "operations"} {
		var exists bool
		query(t, pool, fmt.Sprintf("SELECT to_regclass('public.%s') IS NOT NULL", table), &exists)
		if !exists {
			t.Errorf("table %s missing", table)
		}
	}
	// The template's rows come along with its schema: it must hold none.
	var n int
	query(t, pool, "SELECT count(*) FROM instances", &n)
	if n != 0 {
		t.Errorf("fresh database has %d instances", n)
	}
}

func TestNewDatabaseURLConnects(t *testing.T) {
	t.Parallel()
	url := timed(t, "NewDatabase", func() string { return pgtest.NewDatabase(t) })
	conn, err := pgx.Connect(ctx(t), url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	defer conn.Close(t.Context())
	var exists bool
	if err := conn.QueryRow(ctx(t), "SELECT to_regclass('public.operations') IS NOT NULL").Scan(&exists); err != nil || !exists {
		t.Fatalf("operations table via NewDatabase URL: exists=%v err=%v", exists, err)
	}
}

// Many parallel first users must share one template creation.
func TestParallelNewPool(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			if _, err := pool.Exec(ctx(t), "CREATE TABLE mine (id int)"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDatabaseIsDroppedAfterTest(t *testing.T) {
	var name string
	t.Run("user", func(t *testing.T) {
		// A connection the test forgot to close must not keep the
		// database alive.
		conn, err := pgx.Connect(ctx(t), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx(t), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	if databases(t, name)[name] {
		t.Fatalf("database %s still exists after its test", name)
	}
}

// With KEB_TEST_DATABASE_URL the tests use that server and leave no
// databases behind. Our own server stands in for a CI database.
func TestExternalServerIsLeftClean(t *testing.T) {
	before := databases(t, "keb_%")
	out, err := child(t, map[string]string{"KEB_TEST_DATABASE_URL": pgtest.AdminURL()},
		"-test.run=^(TestNewPoolGivesIsolatedDatabases|TestDatabasesAreMigrated)$", "-test.v")
	if err != nil {
		t.Fatalf("tests against KEB_TEST_DATABASE_URL failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "using KEB_TEST_DATABASE_URL") {
		t.Errorf("child did not use KEB_TEST_DATABASE_URL:\n%s", out)
	}
	after := databases(t, "keb_%")
	for name := range after {
		if !before[name] {
			t.Errorf("database %s left behind on the external server", name)
		}
	}
}

// Without any server, Main fails loudly instead of skipping, and says why.
func TestMainFailsWithoutServer(t *testing.T) {
	out, err := child(t, map[string]string{
		"KEB_TEST_DATABASE_URL": "",
		"KEB_PG_BIN_DIR":        t.TempDir(),
		"DOCKER_HOST":           "unix:///nonexistent/docker.sock",
	}, "-test.run=^$")
	if err == nil {
		t.Fatalf("Main succeeded without a server:\n%s", out)
	}
	for _, want := range []string{"no KEB_TEST_DATABASE_URL", "PostgreSQL server binaries not found", "apt-get install", "Docker:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// child reruns this test binary with env changed (empty value: unset).
func child(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx(t), os.Args[0], args...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, override := env[k]; !override {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		if v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// databases returns the names on the server matching a LIKE pattern.
func databases(t *testing.T, like string) map[string]bool {
	t.Helper()
	conn, err := pgx.Connect(ctx(t), pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(ctx(t), "SELECT datname FROM pg_database WHERE datname LIKE $1", like)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
	}
	return set
}

func dbOf(t *testing.T, pool *pgxpool.Pool) string {
	var name string
	query(t, pool, "SELECT current_database()", &name)
	return name
}

func query(t *testing.T, pool *pgxpool.Pool, sql string, dst any) {
	t.Helper()
	if err := pool.QueryRow(ctx(t), sql).Scan(dst); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// timed reports how long setting up a database takes, since speed is
// pgtest's promise.
func timed[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	began := time.Now()
	v := f()
	t.Logf("%s took %s", what, time.Since(began).Round(time.Millisecond))
	return v
}
