package faults

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestFailoverDuringMigration kills the primary while `keb migrate up` (a
// new release's init container) applies a migration, and promotes the
// standby. The migration's transaction dies with the primary: nothing of it
// is on the new primary, the init container fails, and its restart applies
// the migration once, on the new primary. Then the replica serves a load.
func TestFailoverDuringMigration(t *testing.T) {
	faultsOnly(t)
	s := newStack(t, stackOptions{replicas: 1, accounts: 20, ha: true})
	r := s.replicas[0]
	r.stop() // the rollout: the old release is gone, the new one's init container migrates
	migrate := func(args ...string) (string, error) {
		cmd := exec.Command(kebBin, append([]string{"migrate"}, args...)...)
		cmd.Env = append(os.Environ(), "APP_DATABASE_URL="+s.dbURL)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := migrate("down"); err != nil {
		t.Fatalf("keb migrate down: %v\n%s", err, out)
	}
	head := s.schemaVersion() + 1

	// A transaction holding the tables keeps the migration waiting (it
	// gives up after lock_timeout and tries again), so the migration is
	// surely running when the primary dies.
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
	// SHARE on goose's version table, which every migration writes: the
	// migration waits whatever it does.
	if _, err := tx.Exec(ctx, `LOCK TABLE goose_db_version, instances IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out string
		err error
	}
	first := make(chan result, 1)
	upCmd := exec.Command(kebBin, "migrate", "up")
	upCmd.Env = append(os.Environ(), "APP_DATABASE_URL="+s.dbURL)
	var upOut bytes.Buffer
	upCmd.Stdout, upCmd.Stderr = &upOut, &upOut
	if err := upCmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := upCmd.Wait()
		first <- result{upOut.String(), err}
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
		// Not in tx: a transaction sees one snapshot of pg_stat_activity.
		var n int
		err := s.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND backend_type = 'client backend'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	s.ha.Kill(primary)
	res := <-first
	if res.err == nil {
		t.Fatalf("keb migrate up succeeded although its primary died mid-migration:\n%s", res.out)
	}
	t.Logf("the init container's first run failed as it should: %v: %s", res.err, lastLine(res.out))
	s.ha.Promote()
	s.db.Reset()
	if v := s.schemaVersion(); v != head-1 {
		t.Fatalf("schema version %d on the new primary after the interrupted migration, want %d", v, head-1)
	}
	out, err := migrate("up")
	if err != nil || !strings.Contains(out, fmt.Sprintf("applied 1 migration(s): [%d]", head)) {
		t.Fatalf("the init container's second run: %v\n%s", err, out)
	}
	var applied int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id = $1`, head).Scan(&applied); err != nil || applied != 1 {
		t.Fatalf("migration %d recorded %d times (%v), want once", head, applied, err)
	}

	r.start(t)
	ops := s.provisionMany("migrated", 10)
	live := s.expectSucceeded(ops, 5*time.Minute)
	s.expectOnce(ops)
	s.checkInvariants(live)
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
