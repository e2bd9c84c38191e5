package pgserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"
)

// runner runs PostgreSQL programs as the OS user that owns the cluster.
// PostgreSQL (initdb, pg_ctl and postgres alike) refuses to run as root, so a
// root process hands the cluster to an unprivileged user.
type runner struct {
	binDir string
	log    logrus.FieldLogger
	// cred is nil when we are not root: the programs then run as ourselves.
	cred *syscall.Credential
}

// newRunner decides which OS user runs the cluster in dataDir.
func newRunner(binDir, dataDir string, log logrus.FieldLogger) (*runner, error) {
	r := &runner{binDir: binDir, log: log}
	if os.Geteuid() != 0 {
		return r, nil
	}
	// A cluster someone already created as a normal user stays theirs:
	// postgres must run as the data directory's owner, and chowning it to
	// another user would take it away from them.
	if st, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
			r.cred = &syscall.Credential{Uid: sys.Uid, Gid: sys.Gid}
			return r, nil
		}
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("user %s has non-numeric uid/gid %s/%s", name, u.Uid, u.Gid))
			continue
		}
		// Groups left empty: the child drops root's supplementary groups.
		r.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		log.WithField("user", name).Debug("running as root: PostgreSQL will run as an unprivileged user")
		return r, nil
	}
	return nil, fmt.Errorf("running as root, but PostgreSQL refuses root and no unprivileged user to run it as was found: %w",
		errors.Join(errs...))
}

// command builds an exec.Cmd for one of the server programs.
func (r *runner) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(r.binDir, prog), args...)
	cmd.Env = serverEnv()
	// The unprivileged user may not be able to enter our working directory,
	// and initdb and pg_ctl fail when they cannot resolve it.
	cmd.Dir = "/"
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	return cmd
}

// run runs prog and returns its combined output, which is what explains a
// failure.
func (r *runner) run(ctx context.Context, prog string, args ...string) (string, error) {
	out, err := r.command(ctx, prog, args...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	r.log.WithField("cmd", prog+" "+strings.Join(args, " ")).Debug(text)
	return text, err
}

// serverEnv is our environment without libpq/server variables (PGDATA,
// PGPORT, PGOPTIONS, ...), which would otherwise silently redirect or
// reconfigure the programs we run with explicit arguments.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// prepareDataDir creates dataDir and makes it usable by the server user.
func (r *runner) prepareDataDir(dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("creating data directory: %w", err)
	}
	if r.cred == nil {
		return nil
	}
	st, err := os.Stat(dataDir)
	if err != nil {
		return fmt.Errorf("inspecting data directory: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Uid != r.cred.Uid {
		if err := r.chownTree(dataDir); err != nil {
			return err
		}
	}
	return r.ensureTraversable(filepath.Dir(dataDir))
}

// chownTree hands every file under dir to the server user.
func (r *runner) chownTree(dir string) error {
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(r.cred.Uid), int(r.cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("handing data directory %s to uid %d: %w", dir, r.cred.Uid, err)
	}
	return nil
}

// chown hands one file we wrote as root to the server user; a no-op when we
// are not root.
func (r *runner) chown(path string) error {
	if r.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(r.cred.Uid), int(r.cred.Gid)); err != nil {
		return fmt.Errorf("handing %s to uid %d: %w", path, r.cred.Uid, err)
	}
	return nil
}

// ensureTraversable lets the server user reach the data directory. Temporary
// and home directories of root are often 0700; only the search bit is added
// (not read), so the user can pass through but not list them.
func (r *runner) ensureTraversable(dir string) error {
	for {
		st, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("inspecting %s: %w", dir, err)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if ok && !canSearch(sys, r.cred) {
			mode := st.Mode().Perm() | 0o001
			if err := os.Chmod(dir, mode); err != nil {
				return fmt.Errorf("making %s traversable for uid %d: %w", dir, r.cred.Uid, err)
			}
			r.log.WithField("dir", dir).Infof("added o+x so that PostgreSQL (uid %d) can reach its data directory", r.cred.Uid)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// canSearch applies the permission check the kernel will make for the
// server user (whose only group is its primary one, see newRunner).
func canSearch(st *syscall.Stat_t, cred *syscall.Credential) bool {
	switch {
	case st.Uid == cred.Uid:
		return st.Mode&0o100 != 0
	case st.Gid == cred.Gid:
		return st.Mode&0o010 != 0
	default:
		return st.Mode&0o001 != 0
	}
}
