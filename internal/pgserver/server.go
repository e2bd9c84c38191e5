package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
)

// Superuser is the role initdb creates; it connects without a password.
const Superuser = "keb"

// startTimeout bounds how long a server may take to become ready, ours
// (pg_ctl -t) or one another process is starting.
const startTimeout = 60 * time.Second

// Options configure Start.
type Options struct {
	// DataDir holds the cluster. It is created and initdb'd when missing or
	// empty, and reused when it already holds a cluster (PG_VERSION).
	DataDir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one. A persistent
	// DataDir remembers the port it got so restarts keep the same URL, unless
	// that port has been taken meanwhile. A server already running in
	// DataDir keeps its port.
	Port int
	// Throwaway turns off crash safety (fsync, synchronous_commit,
	// full_page_writes) for clusters deleted after use, i.e. tests. Never
	// for data anyone wants to keep: a machine crash corrupts the cluster.
	Throwaway bool
	// BinDir holds initdb, pg_ctl and postgres; empty means FindBinaries,
	// preferring the version that created an existing DataDir.
	BinDir string
	// Log receives progress and warnings; nil discards them.
	Log logrus.FieldLogger
	// Settings are extra postgresql.conf lines ("name = value") written
	// after keb's own, which they override: a replicating cluster's
	// synchronous_commit and synchronous_standby_names, say.
	Settings []string
}

// Server is a running PostgreSQL.
type Server struct {
	// URL connects as the superuser to the "postgres" database:
	// postgres://keb@127.0.0.1:<port>/postgres?sslmode=disable
	URL     string
	DataDir string
	Port    int
	// Reused is true when the server was already running in DataDir (say,
	// started by another `keb dev`); Stop then leaves it running, because
	// its owner may still be using it.
	Reused bool

	mu      sync.Mutex
	runner  *runner
	stopped bool
}

// Start starts a PostgreSQL server in opts.DataDir, creating the cluster if
// needed, or returns the server already running there.
func Start(ctx context.Context, opts Options) (*Server, error) {
	log := orDiscard(opts.Log)
	if opts.DataDir == "" {
		return nil, errors.New("starting PostgreSQL: Options.DataDir is empty")
	}
	// Absolute because the server programs run with / as working directory.
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolving data directory: %w", err)
	}
	log = log.WithField("data_dir", dataDir)

	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = binDirFor(dataDir); err != nil {
			return nil, err
		}
	}
	r, err := newRunner(binDir, dataDir, log)
	if err != nil {
		return nil, err
	}
	if err := r.prepareDataDir(dataDir); err != nil {
		return nil, err
	}
	unlock, err := lockDataDir(ctx, dataDir, log)
	if err != nil {
		return nil, err
	}
	defer unlock()
	unlockNew, err := ensureCluster(ctx, r, dataDir, opts.Throwaway)
	if err != nil {
		return nil, err
	}
	defer unlockNew()
	if srv, err := reuseRunning(ctx, r, dataDir); srv != nil || err != nil {
		if srv != nil && opts.Port != 0 && srv.Port != opts.Port {
			// Restarting someone else's server to move it would pull the
			// database out from under them.
			log.Warnf("PostgreSQL already runs in the data directory on port %d, not the requested %d; using it", srv.Port, opts.Port)
		}
		return srv, err
	}
	if err := writeConfig(r, dataDir, opts.Throwaway, opts.Settings); err != nil {
		return nil, err
	}
	return startNew(ctx, r, dataDir, opts)
}

// ensureCluster runs initdb unless dataDir already holds a cluster that the
// binaries can run. A new cluster is made in a staging directory beside
// dataDir and renamed onto it once initdb has finished: an initdb cut short
// (Ctrl-C during a first `make run`, a SIGKILL) leaves dataDir empty rather
// than half a cluster, which the next start would have to refuse. The
// staging directory is the caller's while it holds dataDir's lock. The
// returned unlock releases the lock it takes on the new cluster's directory
// (see initdbStaged).
func ensureCluster(ctx context.Context, r *runner, dataDir string, throwaway bool) (unlock func(), err error) {
	if have, err := clusterVersion(dataDir); err == nil {
		want, err := binariesVersion(ctx, r)
		if err != nil {
			return nil, err
		}
		if have != want {
			return nil, fmt.Errorf("data directory %s was created by PostgreSQL %s but the binaries in %s are PostgreSQL %s: "+
				"install PostgreSQL %s and set %s to its bin directory, or delete the data directory to start afresh",
				dataDir, have, r.binDir, want, have, BinDirEnv)
		}
		return func() {}, nil
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("reading data directory: %w", err)
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("data directory %s is not empty but holds no PostgreSQL cluster (no PG_VERSION): "+
			"empty or delete it, or choose another directory", dataDir)
	}
	return initdbStaged(ctx, r, dataDir, throwaway)
}

// initdbStaged creates the cluster in a staging directory and renames it
// onto the empty dataDir. The rename replaces the directory whose inode the
// caller holds locked, so the new one is locked before it takes dataDir's
// name: a process that opens dataDir after the rename waits for this Start
// as it would have before.
func initdbStaged(ctx context.Context, r *runner, dataDir string, throwaway bool) (unlock func(), err error) {
	staging := filepath.Join(filepath.Dir(dataDir), "."+filepath.Base(dataDir)+".initdb")
	if err := os.RemoveAll(staging); err != nil {
		return nil, fmt.Errorf("removing an interrupted initdb's %s: %w", staging, err)
	}
	if err := r.prepareDataDir(staging); err != nil {
		return nil, err
	}
	args := []string{"-D", staging, "-A", "trust", "-U", Superuser, "-E", "UTF8", "--no-locale"}
	if throwaway {
		args = append(args, "--no-sync") // the cluster will not outlive a crash anyway
	}
	r.log.Info("creating PostgreSQL cluster (initdb)")
	if out, err := r.run(ctx, "initdb", args...); err != nil {
		_ = os.RemoveAll(staging)
		return nil, fmt.Errorf("initdb in %s: %w\n%s", staging, err, lastLines(out, 20))
	}
	f, err := os.Open(staging)
	if err != nil {
		return nil, fmt.Errorf("opening the new cluster's directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the new cluster's directory %s: %w", staging, err)
	}
	// rename(2) replaces an empty directory atomically (os.Rename refuses any
	// directory as the target); a dataDir that is a mount point refuses
	// (EBUSY), and is said so.
	if err := syscall.Rename(staging, dataDir); err != nil {
		f.Close()
		return nil, fmt.Errorf("moving the new cluster from %s to %s: %w", staging, dataDir, err)
	}
	return func() { f.Close() }, nil
}

// reuseRunning returns the server already running in dataDir once it is
// ready, or nil when none runs (or the one starting there fails). It removes
// the postmaster.pid of a server that died without cleaning up (killed `keb
// dev`, test binary timed out), since postgres would refuse to start while the
// PID in it looks alive.
//
// A postmaster writes postmaster.pid before it listens: first its PID, data
// directory, start time and port, then its listen address, then its status
// ("starting", later "ready"). Until the status says ready the server is
// waited for, however much of the file is written; PostgreSQL 10 and later
// always write the status.
func reuseRunning(ctx context.Context, r *runner, dataDir string) (*Server, error) {
	deadline := time.Now().Add(startTimeout)
	waitingFor := 0
	for {
		pf, err := readPidFile(dataDir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		case err != nil:
			// Caught mid-write; try again below.
		case !postmasterAlive(pf.pid, dataDir):
			r.log.Infof("removing stale %s of server PID %d, which is no longer running", pidFileName, pf.pid)
			if err := os.Remove(filepath.Join(dataDir, pidFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("removing stale %s: %w", pidFileName, err)
			}
			return nil, nil
		case pf.status == "ready" || pf.status == "standby":
			if pf.port == 0 || pf.listen == "" {
				return nil, fmt.Errorf("the PostgreSQL server running in %s (PID %d) does not listen on TCP; stop it with `pg_ctl -D %s stop`",
					dataDir, pf.pid, dataDir)
			}
			r.log.WithField("port", pf.port).Info("reusing PostgreSQL server already running in data directory")
			return newServer(r, dataDir, pf.port, true), nil
		}
		// Starting or stopping: wait until it is ready or gone.
		if pf != nil && pf.pid != waitingFor {
			waitingFor = pf.pid
			r.log.WithField("pid", pf.pid).Infof("waiting for the PostgreSQL server in the data directory, which is %s", orStarting(pf.status))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("a PostgreSQL server in %s is neither ready nor stopped after %s (%s: %+v)",
				dataDir, startTimeout, pidFileName, pf)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the PostgreSQL server in %s: %w", dataDir, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// orStarting names a postmaster.pid status for a log line; a file without one
// is a server that has only just begun.
func orStarting(status string) string {
	if status == "" {
		return "starting"
	}
	return status
}

// startNew starts the server with pg_ctl, retrying with another port if one
// we picked was grabbed by someone else before postgres could bind it.
func startNew(ctx context.Context, r *runner, dataDir string, opts Options) (*Server, error) {
	if opts.Port != 0 && !portFree(opts.Port) {
		return nil, fmt.Errorf("starting PostgreSQL: port %d on 127.0.0.1 is already in use", opts.Port)
	}
	for attempt := 1; ; attempt++ {
		port, picked, err := choosePort(dataDir, opts)
		if err != nil {
			return nil, err
		}
		err = pgCtlStart(ctx, r, dataDir, port)
		if err == nil {
			if !opts.Throwaway {
				if err := writePortFile(r, dataDir, port); err != nil {
					r.log.WithError(err).Warn("the next start may get another port")
				}
			}
			r.log.WithField("port", port).Info("PostgreSQL started")
			return newServer(r, dataDir, port, false), nil
		}
		var se *startError
		if errors.As(err, &se) && se.lockConflict {
			// Another process started the server between our check and
			// our start (a pg_ctl start by hand; keb's own starts hold
			// lockDataDir): use theirs once it listens, or start ours
			// again if theirs failed.
			srv, rerr := reuseRunning(ctx, r, dataDir)
			if srv != nil {
				return srv, nil
			}
			if rerr != nil {
				return nil, errors.Join(err, rerr)
			}
			if attempt < 3 {
				r.log.Info("the server another process was starting in the data directory is gone; starting ours again")
				continue
			}
		}
		if picked && attempt < 3 && !portFree(port) {
			r.log.WithField("port", port).Info("port was taken before PostgreSQL could bind it; trying another")
			continue
		}
		return nil, err
	}
}

// startError is a failed pg_ctl start, with what the server logged.
type startError struct {
	err          error
	lockConflict bool
}

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

func pgCtlStart(ctx context.Context, r *runner, dataDir string, port int) error {
	logPath := filepath.Join(dataDir, "server.log")
	rotateLog(logPath)
	before := fileSize(logPath)
	out, err := r.run(ctx, "pg_ctl", "start", "-w", "-t", strconv.Itoa(int(startTimeout.Seconds())),
		"-D", dataDir, "-l", logPath, "-o", "-p "+strconv.Itoa(port))
	if err == nil {
		return nil
	}
	logTail := lastLines(readFrom(logPath, before), 30)
	// "lock file ... already exists", "... is empty" (caught mid-write) or
	// "could not create lock file ...": another postmaster got there first.
	// pg_ctl's own "another server might be running" says the same: Start
	// removed any stale lock file before, so the one pg_ctl found belongs to
	// a concurrent start, whose server must not be stopped below.
	lockConflict := strings.Contains(logTail, `lock file "`+pidFileName+`"`) ||
		strings.Contains(out, `lock file "`+pidFileName+`"`) ||
		strings.Contains(out, "another server might be running")
	if !lockConflict {
		// pg_ctl gave up (timeout, cancelled ctx) but the postmaster may still
		// be coming up; nobody would ever stop it.
		if pf, perr := readPidFile(dataDir); perr == nil && postmasterAlive(pf.pid, dataDir) {
			if serr := stopCluster(context.WithoutCancel(ctx), r, dataDir, "immediate"); serr != nil {
				r.log.WithError(serr).Warn("could not stop the server whose start failed")
			}
		}
	}
	return &startError{
		err: fmt.Errorf("starting PostgreSQL on 127.0.0.1:%d (pg_ctl start in %s): %w\n%s\n--- %s ---\n%s",
			port, dataDir, err, out, logPath, logTail),
		lockConflict: lockConflict,
	}
}

func newServer(r *runner, dataDir string, port int, reused bool) *Server {
	return &Server{
		URL:     fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", Superuser, port),
		DataDir: dataDir,
		Port:    port,
		Reused:  reused,
		runner:  r,
	}
}

// Stop shuts the server down (pg_ctl stop -m fast: connections are cut,
// committed data kept). It is safe to call more than once, and does nothing
// for a server Start found already running.
func (s *Server) Stop(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Reused || s.stopped || s.runner == nil {
		return nil
	}
	if err := stopCluster(ctx, s.runner, s.DataDir, "fast"); err != nil {
		return err
	}
	s.stopped = true
	return nil
}

// StopDataDir stops whatever server runs in dataDir, including one this
// process did not start, e.g. one left behind by a killed process.
// It is a no-op when none runs.
func StopDataDir(ctx context.Context, dataDir string, log logrus.FieldLogger) error {
	log = orDiscard(log)
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("resolving data directory: %w", err)
	}
	if pf, err := readPidFile(dataDir); err != nil || !postmasterAlive(pf.pid, dataDir) {
		return nil
	}
	binDir, err := binDirFor(dataDir)
	if err != nil {
		return err
	}
	r, err := newRunner(binDir, dataDir, log)
	if err != nil {
		return err
	}
	return stopCluster(ctx, r, dataDir, "fast")
}

func stopCluster(ctx context.Context, r *runner, dataDir, mode string) error {
	out, err := r.run(ctx, "pg_ctl", "stop", "-w", "-t", strconv.Itoa(int(startTimeout.Seconds())),
		"-m", mode, "-D", dataDir)
	if err == nil {
		return nil
	}
	// Already gone (stopped by someone else, crashed): the goal is reached.
	if pf, perr := readPidFile(dataDir); errors.Is(perr, fs.ErrNotExist) || (perr == nil && !postmasterAlive(pf.pid, dataDir)) {
		return nil
	}
	return fmt.Errorf("stopping PostgreSQL in %s (pg_ctl stop -m %s): %w: %s", dataDir, mode, err, out)
}

// orDiscard is log, or a logger that discards everything when log is nil.
func orDiscard(log logrus.FieldLogger) logrus.FieldLogger {
	if log != nil {
		return log
	}
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
