package procguard

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// scanEvery is how often the watchdog records the parent's descendants: a
// process started less than this before the parent dies may be missed by
// the watchdog (the next Start in the same directory does not see it
// either), so it is short.
const scanEvery = 500 * time.Millisecond

func start(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if stopped, err := Reap(dir); err != nil {
		return fmt.Errorf("reaping what an earlier run left in %s: %w", dir, err)
	} else if len(stopped) > 0 {
		fmt.Fprintf(os.Stderr, "procguard: stopped what an earlier run left behind: %s\n", strings.Join(stopped, ", "))
	}
	self, ok := procOf(os.Getpid())
	if !ok {
		return fmt.Errorf("reading /proc/%d/stat", os.Getpid())
	}
	// Orphans among our descendants (a postmaster whose pg_ctl exited) are
	// re-parented to us instead of init, so they stay in our tree.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding our executable: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d:%s", envWatch, self.PID, self.Start, stateFile(abs, self.PID)))
	cmd.Dir = "/"
	// Its own process group: a Ctrl-C to ours must not stop it before it
	// has done its job.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGUSR1}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the process watchdog: %w", err)
	}
	// The watchdog outlives us by design: nobody waits for it.
	go func() { _ = cmd.Wait() }()
	return nil
}

// watch is the watchdog's main.
func watch(spec string) int {
	parent, path, err := parseSpec(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "procguard:", err)
		return 2
	}
	died := make(chan os.Signal, 1)
	signal.Notify(died, syscall.SIGUSR1)
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	self, _ := procOf(os.Getpid())
	st := state{Parent: parent, Watchdog: self}
	known := map[int]proc{}
	tick := time.NewTicker(scanEvery)
	defer tick.Stop()
	for {
		if os.Getppid() != parent.PID || !alive(parent) {
			break
		}
		changed := false
		for _, p := range descendants(parent.PID, self.PID) {
			if _, ok := known[p.PID]; !ok {
				known[p.PID], changed = p, true
			}
		}
		for pid, p := range known {
			if !alive(p) {
				delete(known, pid)
				changed = true
			}
		}
		if changed || st.Children == nil {
			st.Children = make([]proc, 0, len(known))
			for _, p := range known {
				st.Children = append(st.Children, p)
			}
			_ = writeState(path, st)
		}
		select {
		case <-died:
		case <-tick.C:
			continue
		}
		break
	}
	stopAll(st.Children, 10*time.Second)
	_ = os.Remove(path)
	return 0
}

// stopAll sends SIGTERM to the live processes of ps, then SIGKILL to those
// still alive after grace; it returns the processes it signalled.
func stopAll(ps []proc, grace time.Duration) []proc {
	var live []proc
	for _, p := range ps {
		if alive(p) && syscall.Kill(p.PID, syscall.SIGTERM) == nil {
			live = append(live, p)
		}
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		anyAlive := false
		for _, p := range live {
			if alive(p) {
				anyAlive = true
			}
		}
		if !anyAlive {
			return live
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range live {
		if alive(p) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
	return live
}

// alive reports whether p still runs: same PID, same start time, not a
// zombie.
func alive(p proc) bool {
	cur, ok := procOf(p.PID)
	return ok && cur.Start == p.Start
}

// procOf reads a live process's identity; ok is false for a gone or zombie
// process.
func procOf(pid int) (proc, bool) {
	_, start, cmd, state, ok := readStat(pid)
	if !ok || state == 'Z' || state == 'X' {
		return proc{}, false
	}
	return proc{PID: pid, Start: start, Cmd: cmd}, true
}

// readStat parses /proc/<pid>/stat: the command is in parentheses (and may
// contain spaces or parentheses), so fields are counted after the last ')'.
func readStat(pid int) (ppid int, start uint64, cmd string, state byte, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, "", 0, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open || closing+2 >= len(s) {
		return 0, 0, "", 0, false
	}
	cmd = s[open+1 : closing]
	fields := strings.Fields(s[closing+2:])
	// fields[0] is the state (field 3), fields[1] the ppid (4), fields[19]
	// the start time (22).
	if len(fields) < 20 {
		return 0, 0, "", 0, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	start, err2 := strconv.ParseUint(fields[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, "", 0, false
	}
	return ppid, start, cmd, fields[0][0], true
}

// descendants lists the live descendants of root, except skip.
func descendants(root, skip int) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	info := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, start, cmd, state, ok := readStat(pid)
		if !ok || state == 'Z' || state == 'X' {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		info[pid] = proc{PID: pid, Start: start, Cmd: cmd}
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if c == skip {
				continue
			}
			out = append(out, info[c])
			queue = append(queue, c)
		}
	}
	return out
}

// Running reports whether pid is a live process (not a zombie).
func Running(pid int) bool {
	_, ok := procOf(pid)
	return ok
}

// Descendants lists the PIDs of pid's live descendants.
func Descendants(pid int) []int {
	var out []int
	for _, p := range descendants(pid, 0) {
		out = append(out, p.PID)
	}
	return out
}
