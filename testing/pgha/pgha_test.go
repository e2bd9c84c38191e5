package pgha_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/procguard"
	"github.com/kyma-keb/keb/testing/pgha"
)

func TestMain(m *testing.M) {
	if err := procguard.Start(os.TempDir()); err != nil {
		fmt.Fprintln(os.Stderr, "pgha:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestFailoverKeepsCommittedRows: a row committed on the primary is on the
// standby it promotes after the primary's death; the multi-host URL finds
// the new primary; the old primary rejoins as a standby and receives what
// the new primary commits.
func TestFailoverKeepsCommittedRows(t *testing.T) {
	c := pgha.Start(t)
	exec(t, c.URL(), `CREATE TABLE t (v int)`, `INSERT INTO t VALUES (1)`)
	old := c.Primary()

	c.Kill(old)
	if _, err := connect(c.URL()); err == nil {
		t.Fatal("the multi-host URL found a primary while only the standby ran")
	}
	promoted := c.Promote()
	if promoted == old {
		t.Fatal("Promote returned the dead primary")
	}
	exec(t, c.URL(), `INSERT INTO t VALUES (2)`)
	if got := count(t, promoted.URL()); got != 2 {
		t.Errorf("the promoted standby holds %d rows, want 2 (the one committed before the failover and one after)", got)
	}

	c.Rejoin()
	exec(t, c.URL(), `INSERT INTO t VALUES (3)`)
	// Synchronous commit: the rejoined standby has flushed the row once the
	// insert returns; it shows it once it has replayed it.
	deadline := time.Now().Add(time.Minute)
	for got := count(t, old.URL()); got != 3; got = count(t, old.URL()) {
		if time.Now().After(deadline) {
			t.Fatalf("the rejoined standby holds %d rows a minute later, want 3", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := connect(old.URL() + "&target_session_attrs=read-write"); err == nil {
		t.Error("the rejoined old primary accepts writes")
	}
}

func connect(url string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, url)
}

func exec(t *testing.T, url string, statements ...string) {
	t.Helper()
	conn, err := connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range statements {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func count(t *testing.T, url string) int {
	t.Helper()
	conn, err := connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
