package storage_test

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// TestReadOnlyConnectionIsDropped: a connection whose server refuses writes
// (SQLSTATE 25006, what a primary demoted by a failover answers) is not
// handed out again; the next statement runs on a fresh connection.
func TestReadOnlyConnectionIsDropped(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool, err := storage.Open(ctx, pgtest.NewDatabase(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE t (v int)`); err != nil {
		t.Fatal(err)
	}
	var readOnlyPID int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&readOnlyPID); err != nil {
		t.Fatal(err)
	}
	// The one connection turns read-only, as a demoted primary's would.
	if _, err := pool.Exec(ctx, `SET default_transaction_read_only = on`); err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, `INSERT INTO t VALUES (1)`)
	if err == nil || !storage.Unavailable(err) {
		t.Fatalf("an insert on a read-only connection: %v; want an error the broker answers 503", err)
	}
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if pid == readOnlyPID {
		t.Fatal("the read-only connection was handed out again")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Errorf("an insert on the fresh connection: %v", err)
	}
}

// TestMultiHostURLFindsTheServer: a multi-host URL whose first host is down
// connects to the next one.
func TestMultiHostURLFindsTheServer(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nothing listens there now
	u.Host = down + "," + u.Host
	pool, err := storage.Open(ctx, u.String(), 1)
	if err != nil {
		t.Fatalf("opening %s: %v", strings.Replace(u.String(), u.User.String()+"@", "", 1), err)
	}
	defer pool.Close()
	var one int
	if err := pool.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		t.Fatal(err)
	}
	if pool.Config().ConnConfig.ValidateConnect == nil {
		t.Error("a multi-host URL without target_session_attrs accepts a read-only server")
	}
}
