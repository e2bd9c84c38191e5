// Package procguard ties the lifetime of the processes keb starts (PostgreSQL,
// etcd, kube-apiservers, keb replicas in tests) to the process that started
// them, even when that process is killed with SIGKILL and gets no chance to
// stop them itself.
//
// Start launches a watchdog: a copy of the running executable that records
// every descendant of its parent (every half second, in a state file) and,
// once the parent is gone, stops them: SIGTERM, then SIGKILL after a grace.
// The watchdog learns of the parent's death by the parent-death signal
// (Linux PR_SET_PDEATHSIG through SysProcAttr.Pdeathsig) and, as a safety
// net, by its parent PID changing. The parent is made a child subreaper, so
// daemons it starts (pg_ctl detaches the postmaster) stay its descendants.
//
// A later Start with the same state directory first reaps what an earlier,
// dead parent's state file still lists, in case its watchdog was killed too
// (a `kill -9` of the whole process group).
package procguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// envWatch tells a re-executed binary to be the watchdog of a parent:
// "<parent pid>:<parent start time>:<state file>".
const envWatch = "KEB_PROCGUARD_WATCH"

// proc identifies a process across PID reuse: its PID and its start time
// (clock ticks after boot, from /proc/<pid>/stat).
type proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	Cmd   string `json:"cmd,omitempty"`
}

// state is what a watchdog records in its state file.
type state struct {
	Parent   proc   `json:"parent"`
	Watchdog proc   `json:"watchdog"`
	Children []proc `json:"children"`
}

var (
	once     sync.Once
	startErr error
)

// A re-executed binary becomes the watchdog as soon as this package is
// initialised, before its main or TestMain does anything else (a test's
// TestMain may build binaries or start servers first).
func init() {
	if spec := os.Getenv(envWatch); spec != "" {
		os.Exit(watch(spec))
	}
}

// Start guards the calling process's descendants with a watchdog recording
// them in dir, after reaping what dead earlier parents left there. Later
// calls do nothing.
func Start(dir string) error {
	once.Do(func() { startErr = start(dir) })
	return startErr
}

func stateFile(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("procguard-%d.json", pid))
}

// Reap stops what the state files in dir list for parents that are gone,
// and removes those files. It returns the processes it stopped.
func Reap(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "procguard-*.json"))
	if err != nil {
		return nil, err
	}
	var stopped []string
	var errs []error
	for _, f := range files {
		st, err := readState(f)
		if err != nil {
			continue // half-written by a live watchdog, or not ours
		}
		if alive(st.Parent) {
			continue
		}
		if alive(st.Watchdog) {
			continue // its watchdog is on it
		}
		for _, p := range stopAll(st.Children, 5*time.Second) {
			stopped = append(stopped, fmt.Sprintf("%s (PID %d)", p.Cmd, p.PID))
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return stopped, errors.Join(errs...)
}

func readState(path string) (state, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return state{}, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return state{}, err
	}
	return st, nil
}

func writeState(path string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func parseSpec(spec string) (proc, string, error) {
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) != 3 {
		return proc{}, "", fmt.Errorf("malformed %s=%q", envWatch, spec)
	}
	pid, err1 := strconv.Atoi(parts[0])
	start, err2 := strconv.ParseUint(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return proc{}, "", fmt.Errorf("malformed %s=%q", envWatch, spec)
	}
	return proc{PID: pid, Start: start}, parts[2], nil
}
