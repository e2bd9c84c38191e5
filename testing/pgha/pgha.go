// Package pgha runs a highly available PostgreSQL for tests: a primary and a
// streaming standby with synchronous commit to it, from the machine's own
// server binaries (initdb, pg_basebackup, pg_ctl), as a managed service or
// Patroni runs one. Tests kill, stop, freeze and promote its servers the way
// a failover does, and connect through a multi-host URL with
// target_session_attrs=read-write, which finds whichever is the primary.
//
// Its servers are the test binary's descendants, so procguard (started in
// the test binary's TestMain) stops them if the binary dies.
package pgha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/pgserver"
	"github.com/kyma-keb/keb/internal/procguard"
)

// settings make every commit wait until the standby has it: a transaction
// answered as committed survives the primary's death. Throwaway's
// fsync = off stays (the servers' processes die in these tests, never the
// machine, so the kernel's page cache keeps what they wrote).
var settings = []string{
	"synchronous_commit = on",
	"wal_level = replica",
	"max_wal_senders = 10",
	// A standby notices a dead primary's connection in seconds.
	"wal_receiver_timeout = '5s'",
	"wal_sender_timeout = '5s'",
}

// Node is one PostgreSQL server of the cluster, on a port that stays its
// own across restarts (the multi-host URL names it).
type Node struct {
	Name    string
	DataDir string
	Port    int
	srv     *pgserver.Server
	// frozen holds the PIDs of a frozen server.
	frozen []int
	// dead: killed, nothing to stop.
	dead bool
}

// URL connects to this node alone.
func (n *Node) URL() string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", pgserver.Superuser, n.Port)
}

// Cluster is a primary and a synchronous streaming standby.
type Cluster struct {
	t   testing.TB
	dir string
	log logrus.FieldLogger

	mu      sync.Mutex
	primary *Node
	standby *Node
}

// Start starts the primary, makes the standby from a base backup of it and
// waits until the primary commits synchronously to it. Both are stopped
// when the test ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	silent := logrus.New()
	silent.SetOutput(io.Discard)
	c := &Cluster{t: t, dir: t.TempDir(), log: silent}
	ctx := context.Background()
	a := &Node{Name: "pg-a", DataDir: filepath.Join(c.dir, "pg-a")}
	srv, err := pgserver.Start(ctx, pgserver.Options{DataDir: a.DataDir, Throwaway: true, Settings: settings, Log: silent})
	if err != nil {
		t.Fatalf("starting the primary: %v", err)
	}
	a.srv, a.Port = srv, srv.Port
	t.Cleanup(func() { c.stopNode(a) })
	b := &Node{Name: "pg-b", DataDir: filepath.Join(c.dir, "pg-b")}
	if b.srv, err = pgserver.StartStandby(ctx, a.srv, pgserver.Options{DataDir: b.DataDir, Throwaway: true, Settings: settings, Log: silent}); err != nil {
		t.Fatalf("starting the standby: %v", err)
	}
	b.Port = b.srv.Port
	t.Cleanup(func() { c.stopNode(b) })
	c.primary, c.standby = a, b
	c.requireSync(a)
	return c
}

// URL is the multi-host URL keb is given: both nodes, and only a server
// that accepts writes will do.
func (c *Cluster) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The nodes in a fixed order (a's port first), whichever is primary: a
	// client has to find the primary, not be told.
	a, b := c.primary, c.standby
	if a.Name > b.Name {
		a, b = b, a
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		pgserver.Superuser, a.Port, b.Port)
}

// Primary is the node that is primary now.
func (c *Cluster) Primary() *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.primary
}

// Standby is the node that is (or was, until Promote) the standby.
func (c *Cluster) Standby() *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.standby
}

// requireSync makes primary commit synchronously to any standby and waits
// until its standby streams as the synchronous one.
func (c *Cluster) requireSync(primary *Node) {
	c.t.Helper()
	c.exec(primary, `ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`)
	c.waitFor(time.Minute, "a synchronous standby streaming from "+primary.Name, func() bool {
		var n int
		err := c.queryRow(primary, `SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'`, &n)
		return err == nil && n > 0
	})
}

// Kill kills every process of n's server at once (SIGKILL), as a machine's
// death does: nothing is flushed, no connection is closed politely.
func (c *Cluster) Kill(n *Node) {
	c.t.Helper()
	pids := c.signalServer(n, syscall.SIGSTOP) // first, so that none forks or exits in between
	c.signalPIDs(pids, syscall.SIGKILL)
	n.frozen = nil
	c.waitFor(time.Minute, n.Name+" gone", func() bool {
		gone := true
		for _, pid := range pids {
			// The postmaster and orphaned backends are the test binary's
			// children (procguard makes it a subreaper): reaped here, or
			// pg_ctl would take the zombie for a live server.
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			gone = gone && !procguard.Running(pid)
		}
		return gone
	})
	n.dead = true
}

// Freeze stops every process of n's server (SIGSTOP): to its clients the
// server is cut off, connections open but silent, as in a network partition.
func (c *Cluster) Freeze(n *Node) {
	c.t.Helper()
	n.frozen = c.signalServer(n, syscall.SIGSTOP)
}

// Thaw continues a frozen server.
func (c *Cluster) Thaw(n *Node) {
	c.signalPIDs(n.frozen, syscall.SIGCONT)
	n.frozen = nil
}

// Stop shuts n down cleanly (pg_ctl stop -m fast): a planned switchover's
// first step.
func (c *Cluster) Stop(n *Node) {
	c.t.Helper()
	if err := n.srv.Stop(context.Background()); err != nil {
		c.t.Fatalf("stopping %s: %v", n.Name, err)
	}
}

// Promote makes the standby the primary. The old primary is gone, so the
// new one waits for no standby until one rejoins (Patroni does the same
// unless told to refuse writes without one).
func (c *Cluster) Promote() *Node {
	c.t.Helper()
	c.mu.Lock()
	n := c.standby
	c.mu.Unlock()
	if err := n.srv.Promote(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	c.exec(n, `ALTER SYSTEM SET synchronous_standby_names = ''`, `SELECT pg_reload_conf()`)
	c.mu.Lock()
	c.primary, c.standby = n, c.primary
	c.mu.Unlock()
	return n
}

// Rejoin makes the old primary, stopped or dead, a standby of the new one:
// its data directory is replaced by a base backup of the primary (what it
// had written past the promotion is discarded, as it must be) and it starts
// on its old port; then the primary commits synchronously to it again.
func (c *Cluster) Rejoin() {
	c.t.Helper()
	c.mu.Lock()
	old, primary := c.standby, c.primary
	c.mu.Unlock()
	c.stopNode(old)
	if err := os.RemoveAll(old.DataDir); err != nil {
		c.t.Fatal(err)
	}
	srv, err := pgserver.StartStandby(context.Background(), primary.srv, pgserver.Options{DataDir: old.DataDir, Port: old.Port,
		Throwaway: true, Settings: settings, Log: c.log})
	if err != nil {
		c.t.Fatalf("rejoining %s as a standby: %v", old.Name, err)
	}
	if srv.Port != old.Port {
		c.t.Fatalf("%s came back on port %d, not %d", old.Name, srv.Port, old.Port)
	}
	old.srv, old.dead = srv, false
	c.requireSync(primary)
}

// BaseBackup takes a base backup of the primary into dir, to start later
// with Restore.
func (c *Cluster) BaseBackup(dir string) {
	c.t.Helper()
	if err := pgserver.BaseBackup(context.Background(), c.Primary().srv, dir, false, c.log); err != nil {
		c.t.Fatal(err)
	}
}

// Restore starts a server of its own from a base backup in dir (the
// database as it was at the end of the backup); it is stopped when the test
// ends.
func (c *Cluster) Restore(dir string) *Node {
	c.t.Helper()
	srv, err := pgserver.Start(context.Background(), pgserver.Options{DataDir: dir, Throwaway: true, Log: c.log})
	if err != nil {
		c.t.Fatalf("starting the restored backup: %v", err)
	}
	n := &Node{Name: "restored", DataDir: dir, Port: srv.Port, srv: srv}
	c.t.Cleanup(func() { c.stopNode(n) })
	// The backup carries the primary's synchronous_standby_names; the
	// restored server has no standby to wait for.
	c.exec(n, `ALTER SYSTEM SET synchronous_standby_names = ''`, `SELECT pg_reload_conf()`)
	return n
}

// stopNode stops n's server whatever its state: a frozen one is continued
// first, a dead one needs nothing.
func (c *Cluster) stopNode(n *Node) {
	if len(n.frozen) > 0 {
		c.Thaw(n)
	}
	if n.srv == nil || n.dead {
		return
	}
	if err := n.srv.Stop(context.Background()); err != nil {
		c.t.Logf("stopping %s: %v", n.Name, err)
	}
}

// signalServer sends sig to every process of n's server (Signal).
func (c *Cluster) signalServer(n *Node, sig syscall.Signal) []int {
	c.t.Helper()
	pids, err := Signal(n.DataDir, sig)
	if err != nil {
		c.t.Fatalf("%s: %v", n.Name, err)
	}
	return pids
}

func (c *Cluster) signalPIDs(pids []int, sig syscall.Signal) {
	if err := SignalPIDs(pids, sig); err != nil {
		c.t.Log(err)
	}
}

// Signal sends sig to the postmaster running in dataDir and then to its
// processes until a scan finds none not yet signalled, and returns their
// PIDs. The postmaster goes first, so that after a SIGSTOP it forks no
// backend the scan could miss (a backend forked between a scan and the
// postmaster's stop would otherwise answer queries through a "frozen"
// database, as happened under load).
func Signal(dataDir string, sig syscall.Signal) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	postmaster, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return nil, fmt.Errorf("reading postmaster.pid: %w", err)
	}
	pids := []int{postmaster}
	errs := []error{SignalPIDs(pids, sig)}
	signalled := map[int]bool{postmaster: true}
	for {
		var fresh []int
		for _, pid := range procguard.Descendants(postmaster) {
			if !signalled[pid] {
				signalled[pid] = true
				fresh = append(fresh, pid)
			}
		}
		if len(fresh) == 0 {
			return pids, errors.Join(errs...)
		}
		errs = append(errs, SignalPIDs(fresh, sig))
		pids = append(pids, fresh...)
	}
}

// SignalPIDs sends sig to each of pids.
func SignalPIDs(pids []int, sig syscall.Signal) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			errs = append(errs, fmt.Errorf("signalling PostgreSQL process %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// Describe says what each node is now, as its own connection finds it
// (primary, standby, or why it did not answer within seconds), for a test
// that waited in vain.
func (c *Cluster) Describe() string {
	c.mu.Lock()
	nodes, primary := []*Node{c.primary, c.standby}, c.primary
	c.mu.Unlock()
	var lines []string
	for _, n := range nodes {
		role := "the standby"
		if n == primary {
			role = "the primary"
		}
		var recovering bool
		state := "answers as a primary"
		switch err := c.queryRowWithin(n, 3*time.Second, `SELECT pg_is_in_recovery()`, &recovering); {
		case err != nil:
			state = "does not answer: " + err.Error()
		case recovering:
			state = "answers as a standby"
		}
		lines = append(lines, fmt.Sprintf("%s (port %d, %s to the test): %s", n.Name, n.Port, role, state))
	}
	return strings.Join(lines, "\n")
}

// exec runs statements on n, each in its own round trip.
func (c *Cluster) exec(n *Node, statements ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.URL())
	if err != nil {
		c.t.Fatalf("connecting to %s: %v", n.Name, err)
	}
	defer conn.Close(context.Background())
	for _, s := range statements {
		if _, err := conn.Exec(ctx, s); err != nil {
			c.t.Fatalf("%s on %s: %v", s, n.Name, err)
		}
	}
}

// queryRow reads one row from n.
func (c *Cluster) queryRow(n *Node, sql string, dest ...any) error {
	return c.queryRowWithin(n, 10*time.Second, sql, dest...)
}

// queryRowWithin reads one row from n within d.
func (c *Cluster) queryRowWithin(n *Node, d time.Duration, sql string, dest ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dest...)
}

// waitFor waits for an eventual outcome, with a generous bound.
func (c *Cluster) waitFor(within time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
