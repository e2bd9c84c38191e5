// Package pgtest gives every database-backed test a real PostgreSQL database
// with keb's schema, so that tests exercise the SQL that production runs
// rather than a fake.
//
// A package opts in with
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and then calls NewPool or NewDatabase in its tests. The server comes from,
// in this order: KEB_TEST_DATABASE_URL, the machine's PostgreSQL binaries
// (a throwaway cluster in a temp dir), or a Docker container. When none is
// available the tests fail with every reason tried: a skipped database test
// is a test that silently stopped protecting anything.
package pgtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/procguard"
)

// EnvURL names the variable holding an admin URL of an existing server. The
// role needs CREATEDB; pgtest creates and drops its own databases there and
// leaves everything else alone.
const EnvURL = "KEB_TEST_DATABASE_URL"

// setupTimeout bounds finding and starting a server, which includes initdb
// (or pulling an image) on a loaded machine.
const setupTimeout = 3 * time.Minute

// The server of this test binary, set up once by Main.
var (
	adminURL  string
	admin     *pgxpool.Pool
	serverNum int // server_version_num, e.g. 150004
)

// AdminURL is the admin URL of this test binary's server, for a process the
// test starts that is to use the same server (as EnvURL).
func AdminURL() string { return adminURL }

// Main wraps testing.M for a package's TestMain: it finds or starts a
// PostgreSQL server once per test binary, runs the tests, removes what it
// created and exits. Without a server it exits non-zero.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without os.Exit: it returns the exit code, so that a package
// needing more (such as a kube-apiserver from k8stest) can wrap it.
func Run(m *testing.M) int {
	// A throwaway server dies with the test binary, even when `go test
	// -timeout` or a SIGKILL ends it.
	if err := procguard.Start(os.TempDir()); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	// testing.Verbose needs parsed flags; m.Run parses them again harmlessly.
	if !flag.Parsed() {
		flag.Parse()
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	srv, err := startServer(ctx)
	if err == nil {
		err = connectAdmin(ctx, srv)
		if err != nil {
			srv.stop(context.Background())
		}
	}
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: no PostgreSQL server for the tests (they need one and never skip):\n  %v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "pgtest: using %s, ready in %s\n", srv.source, time.Since(began).Round(time.Millisecond))
	}

	code := m.Run()

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !srv.disposable {
		// A shared server outlives us: leave it as we found it.
		if err := dropCreated(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: dropping test databases: %v\n", err)
			code = nonZero(code)
		}
	}
	admin.Close()
	if err := srv.stop(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping %s: %v\n", srv.source, err)
		code = nonZero(code)
	}
	return code
}

// nonZero turns success into failure but keeps an existing failure's code.
func nonZero(code int) int {
	if code == 0 {
		return 1
	}
	return code
}

func connectAdmin(ctx context.Context, srv *server) error {
	cfg, err := pgxpool.ParseConfig(srv.url)
	if err != nil {
		return fmt.Errorf("%s: parsing URL: %w", srv.source, err)
	}
	// Only CREATE/DROP DATABASE run here, a few at a time.
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", srv.source, err)
	}
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&serverNum); err != nil {
		pool.Close()
		return fmt.Errorf("%s: connecting: %w", srv.source, err)
	}
	adminURL, admin = srv.url, pool
	return nil
}
