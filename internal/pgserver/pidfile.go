package pgserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// postmasterPid is what a running server writes to <DataDir>/postmaster.pid.
type postmasterPid struct {
	pid    int
	port   int
	listen string // listen_addresses; empty means no TCP
	status string // "starting", "ready", "stopping", or "" before PostgreSQL 10
}

const pidFileName = "postmaster.pid"

// readPidFile parses postmaster.pid; its line layout is fixed by PostgreSQL
// (see LOCK_FILE_LINE_* in miscadmin.h). A missing file yields an error
// satisfying errors.Is(err, os.ErrNotExist).
func readPidFile(dataDir string) (*postmasterPid, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, pidFileName))
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	line := func(n int) string {
		if n <= len(lines) {
			return strings.TrimSpace(lines[n-1])
		}
		return ""
	}
	pid, err := strconv.Atoi(line(1))
	if err != nil || pid == 0 {
		// The server writes the file in one go, but a reader can still catch
		// it half-written; callers retry.
		return nil, fmt.Errorf("%s holds no PID yet", pidFileName)
	}
	if pid < 0 {
		pid = -pid // a single-user backend writes its PID negated
	}
	p := &postmasterPid{pid: pid, listen: line(6), status: line(8)}
	p.port, _ = strconv.Atoi(line(4))
	return p, nil
}

// postmasterAlive tells whether pid is a live server for dataDir. pg_ctl
// only asks the kernel whether the PID exists, which is wrong in two cases
// that a killed `keb dev` or test run leaves behind: the postmaster is a
// zombie nobody reaps (PID 1 in many containers does not), or its PID was
// reused by an unrelated process. Where /proc exists both are detected.
func postmasterAlive(pid int, dataDir string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if _, err := os.Stat("/proc/self/stat"); err == nil {
			return false // /proc works, so the process is gone
		}
		// No procfs (macOS): fall back to asking the kernel.
		err := syscall.Kill(pid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain spaces or parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		if state := s[i+2]; state == 'Z' || state == 'X' {
			return false
		}
	}
	// The postmaster chdirs into its data directory, which identifies it.
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return true // not ours to inspect: trust the PID
	}
	want, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		want = dataDir
	}
	return cwd == want
}
