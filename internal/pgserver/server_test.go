package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sirupsen/logrus"
)

func TestThrowawayServer(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "pgdata")
	srv := start(t, Options{DataDir: dataDir, Throwaway: true})

	if !strings.HasPrefix(srv.URL, "postgres://keb@127.0.0.1:") || srv.Port == 0 || srv.Reused {
		t.Fatalf("unexpected server %+v", srv)
	}
	conn := connect(t, srv.URL)
	execSQL(t, conn, "CREATE TABLE things (id int PRIMARY KEY)")
	execSQL(t, conn, "INSERT INTO things VALUES (1), (2)")
	if n := queryInt(t, conn, "SELECT count(*) FROM things"); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
	for setting, want := range map[string]string{
		"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off",
		"max_connections": "200", "listen_addresses": "127.0.0.1", "unix_socket_directories": "",
	} {
		if got := queryString(t, conn, "SHOW "+setting); got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	conn.Close(t.Context())

	stop(t, srv)
	if err := srv.Stop(t.Context()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, pidFileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("postmaster.pid still there after Stop: %v", err)
	}
	if c, err := pgx.Connect(ctxT(t), srv.URL); err == nil {
		c.Close(t.Context())
		t.Fatal("connected after Stop")
	}
}

func TestPersistentRestartKeepsDataAndPort(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "pgdata")
	first := start(t, Options{DataDir: dataDir})
	conn := connect(t, first.URL)
	execSQL(t, conn, "CREATE TABLE kept (v text)")
	execSQL(t, conn, "INSERT INTO kept VALUES ('hello')")
	if got := queryString(t, conn, "SHOW fsync"); got != "on" {
		t.Errorf("persistent cluster has fsync=%s", got)
	}
	conn.Close(t.Context())
	stop(t, first)

	second := start(t, Options{DataDir: dataDir})
	if second.Reused {
		t.Fatal("restart after Stop claims to reuse a running server")
	}
	if second.Port != first.Port || second.URL != first.URL {
		t.Errorf("restart moved the server from port %d to %d", first.Port, second.Port)
	}
	conn = connect(t, second.URL)
	if got := queryString(t, conn, "SELECT v FROM kept"); got != "hello" {
		t.Fatalf("data after restart = %q", got)
	}
	conn.Close(t.Context())
}

func TestStartReusesRunningServer(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "pgdata")
	first := start(t, Options{DataDir: dataDir, Throwaway: true})
	second := start(t, Options{DataDir: dataDir, Throwaway: true})
	if !second.Reused || second.URL != first.URL {
		t.Fatalf("second Start = %+v, want reuse of %s", second, first.URL)
	}
	// Stopping the borrower must leave the owner's server running.
	stop(t, second)
	conn := connect(t, first.URL)
	conn.Close(t.Context())

	stop(t, first)
	if pf, err := readPidFile(dataDir); err == nil && postmasterAlive(pf.pid, dataDir) {
		t.Fatal("server still running after its starter stopped it")
	}
}

func TestStartAfterKilledServer(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "pgdata")
	first := start(t, Options{DataDir: dataDir})
	conn := connect(t, first.URL)
	execSQL(t, conn, "CREATE TABLE survived (id int)")
	conn.Close(t.Context())

	// What a SIGKILLed `keb dev` with a crashed server leaves behind: a
	// postmaster.pid naming a dead (or zombie) process.
	pf, err := readPidFile(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pf.pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing postmaster: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for postmasterAlive(pf.pid, dataDir) {
		if time.Now().After(deadline) {
			t.Fatal("killed postmaster still alive")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dataDir, pidFileName)); err != nil {
		t.Fatalf("expected a stale postmaster.pid: %v", err)
	}

	second := start(t, Options{DataDir: dataDir})
	if second.Reused {
		t.Fatal("reused a dead server")
	}
	conn = connect(t, second.URL)
	execSQL(t, conn, "SELECT * FROM survived")
	conn.Close(t.Context())
}

func TestStartIgnoresPidFileOfUnrelatedProcess(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "pgdata")
	stop(t, start(t, Options{DataDir: dataDir, Throwaway: true}))

	// After a reboot or a long time, the PID in a stale postmaster.pid can
	// belong to a live, unrelated process; pg_ctl would think the server
	// runs. Our own PID stands in for that process.
	writeFile(t, filepath.Join(dataDir, pidFileName),
		fmt.Sprintf("%d\n%s\n1700000000\n5999\n\n127.0.0.1\n  1234  5678\nready   \n", os.Getpid(), dataDir))
	srv := start(t, Options{DataDir: dataDir, Throwaway: true})
	if srv.Reused {
		t.Fatal("took an unrelated process for the server")
	}
	connect(t, srv.URL).Close(t.Context())
}

// TestConcurrentStartsShareOneServer starts twice at once on one data
// directory, as two `keb dev` (or a `keb dev` and a test) do: one server is
// started, the other start waits for it to listen and reuses it, whether the
// directory holds a stopped cluster or nothing yet (one initdb).
func TestConcurrentStartsShareOneServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dataDir string)
	}{
		{"stopped cluster", func(t *testing.T, dataDir string) { stop(t, start(t, Options{DataDir: dataDir})) }},
		{"empty directory", func(*testing.T, string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "pgdata")
			tc.prepare(t, dataDir)
			servers := make([]*Server, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range servers {
				wg.Go(func() { servers[i], errs[i] = Start(ctxT(t), Options{DataDir: dataDir}) })
			}
			wg.Wait()
			for i, srv := range servers {
				if errs[i] != nil {
					t.Fatalf("Start %d: %v", i, errs[i])
				}
				t.Cleanup(func() { _ = srv.Stop(context.Background()) })
			}
			if servers[0].URL != servers[1].URL || servers[0].Reused == servers[1].Reused {
				t.Fatalf("want one started and one reused server on the same URL, got %+v and %+v", servers[0], servers[1])
			}
			connect(t, servers[0].URL).Close(t.Context())
		})
	}
}

// TestStartWaitsForServerStartingInDataDir starts while a postmaster that
// Start did not launch (`pg_ctl start` by hand, an older keb) is starting in
// the data directory: its postmaster.pid names a live process but neither
// its listen address nor its status yet. Start waits for it, then reuses it
// once it is ready, or starts its own server once it has failed.
func TestStartWaitsForServerStartingInDataDir(t *testing.T) {
	t.Parallel()
	for _, outcome := range []string{"ready", "failed"} {
		t.Run(outcome, func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "pgdata")
			stop(t, start(t, Options{DataDir: dataDir, Throwaway: true}))

			// The starting postmaster: a process whose working directory is
			// the data directory, as a postmaster's is; when it gets ready it
			// listens on the port of a real server elsewhere.
			port := 1 // never listened on
			if outcome == "ready" {
				port = start(t, Options{DataDir: filepath.Join(t.TempDir(), "other"), Throwaway: true}).Port
			}
			postmaster := exec.Command("sleep", "600")
			postmaster.Dir = dataDir
			if err := postmaster.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = postmaster.Process.Kill(); _ = postmaster.Wait() })
			pidPath := filepath.Join(dataDir, pidFileName)
			// What a postmaster writes first: PID, data directory, start
			// time, port and (empty) socket directory.
			lockFile := fmt.Sprintf("%d\n%s\n%d\n%d\n\n", postmaster.Process.Pid, dataDir, time.Now().Unix(), port)
			writeFile(t, pidPath, lockFile)

			log := logrus.New()
			log.SetLevel(logrus.DebugLevel)
			log.SetOutput(testWriter{t})
			waiting := make(chan struct{})
			log.AddHook(&messageHook{contains: "waiting for the PostgreSQL server in the data directory", seen: waiting})
			type result struct {
				srv *Server
				err error
			}
			done := make(chan result, 1)
			go func() {
				srv, err := Start(ctxT(t), Options{DataDir: dataDir, Throwaway: true, Log: log})
				done <- result{srv, err}
			}()
			select {
			case <-waiting:
			case r := <-done:
				t.Fatalf("Start returned while a server was starting in the data directory: %+v, %v", r.srv, r.err)
			}

			// Then it listens and is starting up.
			lockFile += "127.0.0.1\n  5432001  0\nstarting\n"
			writeFile(t, pidPath, lockFile)
			if outcome == "ready" {
				writeFile(t, pidPath, strings.Replace(lockFile, "starting\n", "ready   \n", 1))
			} else {
				// A postmaster that fails removes its postmaster.pid as it exits.
				_ = postmaster.Process.Kill()
				_ = postmaster.Wait()
				if err := os.Remove(pidPath); err != nil {
					t.Fatal(err)
				}
			}
			r := <-done
			if r.err != nil {
				t.Fatalf("Start: %v", r.err)
			}
			t.Cleanup(func() { _ = r.srv.Stop(context.Background()) })
			if want := outcome == "ready"; r.srv.Reused != want || (want && r.srv.Port != port) {
				t.Fatalf("Start after the other server got %s = %+v, want reused=%v (port %d)", outcome, r.srv, want, port)
			}
			connect(t, r.srv.URL).Close(t.Context())
		})
	}
}

func TestStartRefusesForeignDirectory(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	writeFile(t, filepath.Join(dataDir, "notes.txt"), "mine")
	_, err := Start(ctxT(t), Options{DataDir: dataDir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Start in a non-empty non-cluster directory: %v", err)
	}
}

// start starts a server and makes sure it is stopped when the test ends,
// even if it fails halfway.
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.SetOutput(testWriter{t})
	opts.Log = log
	began := time.Now()
	srv, err := Start(ctxT(t), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %s (reused=%v)", time.Since(began).Round(time.Millisecond), srv.Reused)
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("Stop at cleanup: %v", err)
		}
	})
	return srv
}

func stop(t *testing.T, srv *Server) {
	t.Helper()
	if err := srv.Stop(ctxT(t)); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	return conn
}

func execSQL(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(ctxT(t), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(ctxT(t), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func queryString(t *testing.T, conn *pgx.Conn, sql string) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(ctxT(t), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// messageHook closes seen when a log message contains contains.
type messageHook struct {
	contains string
	seen     chan struct{}
	once     sync.Once
}

func (h *messageHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h *messageHook) Fire(e *logrus.Entry) error {
	if strings.Contains(e.Message, h.contains) {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// testWriter sends the server's progress log to t.Log, shown on failure or -v.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// An initdb cut short (Ctrl-C during a first `make run`) leaves the data
// directory empty, and what it had written beside it is cleared by the next
// start, which creates the cluster: before, the half-made cluster stayed in
// the data directory and every later start refused it as foreign.
func TestInterruptedInitdbLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "pgdata")
	// An initdb that writes half a cluster and dies, as one interrupted does.
	broken := filepath.Join(dir, "bin")
	if err := os.Mkdir(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(broken, "initdb"), "#!/bin/sh\nmkdir -p \"$2/base/1\" && echo half > \"$2/postgresql.conf\"\nkill -9 $$\n")
	if err := os.Chmod(filepath.Join(broken, "initdb"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(ctxT(t), Options{DataDir: dataDir, BinDir: broken, Throwaway: true}); err == nil || !strings.Contains(err.Error(), "initdb") {
		t.Fatalf("Start with an initdb that dies: %v, want initdb's failure", err)
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) > 0 {
		t.Fatalf("the data directory after an interrupted initdb holds %v (%v), want it empty", entries, err)
	}
	// A SIGKILLed start leaves its staging directory: the next start clears it.
	if err := os.Mkdir(filepath.Join(dir, ".pgdata.initdb"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".pgdata.initdb", "PG_VERSION"), "half")
	srv := start(t, Options{DataDir: dataDir, Throwaway: true})
	connect(t, srv.URL).Close(t.Context())
	if _, err := os.Stat(filepath.Join(dir, ".pgdata.initdb")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the staging directory is still there after a start: %v", err)
	}
}
