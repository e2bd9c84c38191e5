package faults

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/migrations"
)

// TestFailoverDuringMigration is a rolling upgrade whose migration meets a
// failover. The previous release (keb built from the commit before the
// newest migrations) serves the scenario's load (accepts, polls, bindings,
// an orchestration) on two replicas while the new release's init container
// runs `keb migrate up`; the primary is killed while the first new
// migration runs and the standby is promoted. What the migration did not
// finish is not recorded on the new primary (a concurrent index build
// leaves an INVALID index behind), the init container's first run fails,
// and its rerun applies each new migration once, on the new primary, with
// no invalid index left. The load, served by the previous release throughout, keeps
// every promise of the other failover scenarios; the new release then
// serves on the migrated schema.
func TestFailoverDuringMigration(t *testing.T) {
	faultsOnly(t)
	prev := previousRelease(t)
	var head int64
	sc := startScenarioPrepared(t, "migrate", stackOptions{bin: prev.bin, accounts: 4}, func(s *stack) {
		// The previous release migrated the database with its own files;
		// the schema before the newest migration is what this tree's files
		// make it (a migration may have handed work to the newest one, as
		// 00020 handed its index to 00022): rolled back to before the
		// oldest file this tree changed, and migrated again.
		head = s.schemaVersion() + 1
		for prev.oldestChanged > 0 && s.schemaVersion() >= prev.oldestChanged {
			if out, err := migrateCmd(s, "down").CombinedOutput(); err != nil {
				t.Fatalf("keb migrate down: %v\n%s", err, out)
			}
		}
		if out, err := migrateCmd(s, "up", "--to", fmt.Sprint(head-1)).CombinedOutput(); err != nil {
			t.Fatalf("keb migrate up --to %d: %v\n%s", head-1, err, out)
		}
	})
	s := sc.s
	t.Logf("the previous release serves at schema %d; the new release's migrations %v come", head-1, prev.pending)

	// A writer's transaction, open before the migration, keeps it waiting
	// without blocking the load: a concurrent index build waits for it
	// after committing the index's catalog entry, a transactional
	// migration waits for its lock on instances or, whatever else it
	// changes, on goose's version table (SHARE: which readers pass).
	ctx := context.Background()
	primary := s.ha.Primary()
	holder, err := pgx.Connect(ctx, primary.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{`LOCK TABLE instances IN ROW EXCLUSIVE MODE`, `LOCK TABLE goose_db_version IN SHARE MODE`} {
		if _, err := tx.Exec(ctx, lock); err != nil {
			t.Fatal(err)
		}
	}
	first := make(chan migrateResult, 1)
	upCmd := migrateCmd(s, "up")
	var upOut bytes.Buffer
	upCmd.Stdout, upCmd.Stderr = &upOut, &upOut
	if err := upCmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := upCmd.Wait()
		first <- migrateResult{upOut.String(), err}
	}()
	defer func() {
		if t.Failed() {
			_ = upCmd.Process.Signal(syscall.SIGQUIT)
			res := <-first
			t.Logf("keb migrate up: %v\n%s", res.err, res.out)
		}
	}()
	waitFor(t, time.Minute, "the migration waiting for its lock", func() bool {
		select {
		case res := <-first:
			t.Fatalf("keb migrate up ended while a transaction held its table: %v\n%s", res.err, res.out)
		default:
		}
		// The replicas' connections are named; the migrator's is not.
		var n int
		err := s.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
			AND backend_type = 'client backend' AND application_name <> $1`, appName).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	t.Logf("at the fault the migration waits; invalid indexes: %v", s.invalidIndexes())

	sc.faultNow()
	s.ha.Kill(primary)
	res := <-first
	if res.err == nil {
		t.Fatalf("keb migrate up succeeded although its primary died mid-migration:\n%s", res.out)
	}
	t.Logf("the init container's first run failed as it should: %v: %s", res.err, lastLine(res.out))
	time.Sleep(detection)
	s.ha.Promote()
	promoted := time.Now()
	s.db.Reset()
	if v := s.schemaVersion(); v != head-1 {
		t.Fatalf("schema version %d on the new primary after the interrupted migration, want %d", v, head-1)
	}
	t.Logf("on the new primary before the rerun, invalid indexes (a failed concurrent build's leftovers): %v", s.invalidIndexes())
	// The init container restarts, under the load.
	rerun := migrateCmd(s, "up")
	out, err := rerun.CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("applied %d migration(s): %v", len(prev.pending), prev.versions(head))) {
		t.Fatalf("the init container's second run: %v\n%s", err, out)
	}
	var applied int
	for _, v := range prev.versions(head) {
		if err := s.db.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id = $1`, v).Scan(&applied); err != nil || applied != 1 {
			t.Fatalf("migration %d recorded %d times (%v), want once", v, applied, err)
		}
	}
	if bad := s.invalidIndexes(); len(bad) > 0 {
		t.Errorf("invalid indexes after the migration: %v", bad)
	}
	t.Logf("the rerun applied migrations %v %s after the promotion", prev.versions(head), time.Since(promoted).Round(time.Millisecond))
	sc.finish(promoted)

	// The new release rolls out on the migrated schema.
	for _, r := range s.replicas {
		r.stop()
		r.bin = ""
		r.start(t)
	}
	ops := s.provisionMany("migrated", 4)
	s.expectSucceeded(ops, 5*time.Minute)
	s.expectOnce(ops)
}

type migrateResult struct {
	out string
	err error
}

// migrateCmd is this tree's `keb migrate` (the new release's init
// container) against the stack's database.
func migrateCmd(s *stack, args ...string) *exec.Cmd {
	cmd := exec.Command(kebBin, append([]string{"migrate"}, args...)...)
	cmd.Env = append(os.Environ(), "APP_DATABASE_URL="+s.dbURL)
	return cmd
}

// invalidIndexes lists the indexes PostgreSQL marks invalid.
func (s *stack) invalidIndexes() []string {
	s.t.Helper()
	rows, err := s.db.Query(context.Background(), `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		WHERE NOT i.indisvalid ORDER BY 1`)
	if err != nil {
		s.t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		s.t.Fatal(err)
	}
	return names
}

// release is the previous release: its keb binary, the migrations this
// tree adds to it, and the oldest migration whose file this tree
// changed since (0 if none).
type release struct {
	bin string
	// pending are the migrations this tree has and the previous release
	// has not, oldest first: one, or several that landed together.
	pending       []string
	oldestChanged int64
}

// versions are the goose versions of the pending migrations, the first of
// them being first.
func (r release) versions(first int64) []int64 {
	var v []int64
	for i := range r.pending {
		v = append(v, first+int64(i))
	}
	return v
}

// previousRelease builds keb as it was before the newest migrations: the
// source of the newest commit in this tree's history whose migrations are
// this tree's oldest ones (by name: a renumbered migration makes another
// release), from git. Usually one migration is newer; several are when they
// landed in one commit.
func previousRelease(t *testing.T) release {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("the embedded migrations: %v", err)
	}
	slices.Sort(files)
	git := func(args ...string) string {
		out, err := exec.Command("git", args...).Output()
		if err != nil {
			t.Fatalf("git %v (this scenario builds the previous release from the repository's history): %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	root := git("rev-parse", "--show-toplevel")
	var base string
	var pending []string
	for _, c := range strings.Fields(git("-C", root, "rev-list", "--max-count=500", "HEAD")) {
		var had []string
		for _, f := range strings.Fields(git("-C", root, "ls-tree", "--name-only", c, "migrations/")) {
			if strings.HasSuffix(f, ".sql") {
				had = append(had, strings.TrimPrefix(f, "migrations/"))
			}
		}
		slices.Sort(had)
		if len(had) < len(files) && slices.Equal(had, files[:len(had)]) {
			base, pending = c, files[len(had):]
			break
		}
	}
	if base == "" {
		t.Fatalf("no commit in the last 500 has this tree's migrations but its newest: cannot tell the release before %s", files[len(files)-1])
	}
	rel := release{pending: pending}
	for _, f := range strings.Fields(git("-C", root, "diff", "--name-only", base, "--", "migrations/")) {
		var v int64
		if _, err := fmt.Sscanf(filepath.Base(f), "%d_", &v); err == nil && !slices.Contains(pending, filepath.Base(f)) && (rel.oldestChanged == 0 || v < rel.oldestChanged) {
			rel.oldestChanged = v
		}
	}
	dir := filepath.Join(t.TempDir(), "previous")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", root, base, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extracting %s: %v\n%s", base, err, out)
	}
	rel.bin = filepath.Join(dir, "keb")
	began := time.Now()
	build := exec.Command("go", "build", "-o", rel.bin, "./cmd/keb")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the previous release (%s): %v\n%s", base, err, out)
	}
	t.Logf("built the previous release from %s (before %s; this tree changed migrations from %d on) in %s",
		git("-C", root, "rev-parse", "--short", base), pending[0], rel.oldestChanged, time.Since(began).Round(time.Second))
	return rel
}

// schemaVersion is the highest migration applied.
func (s *stack) schemaVersion() int64 {
	s.t.Helper()
	var v int64
	if err := s.db.QueryRow(context.Background(), `SELECT max(version_id) FROM goose_db_version WHERE is_applied`).Scan(&v); err != nil {
		s.t.Fatal(err)
	}
	return v
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
