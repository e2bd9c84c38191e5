//go:build linux

package procguard

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envParent makes the test binary play a parent that starts children and
// waits to be killed.
const envParent = "PROCGUARD_TEST_PARENT_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envParent); dir != "" {
		os.Exit(playParent(dir))
	}
	os.Exit(m.Run())
}

// playParent starts a child and a detached grandchild (what pg_ctl does to
// the postmaster), prints their PIDs and sleeps until killed.
func playParent(dir string) int {
	if err := Start(dir); err != nil {
		fmt.Println("error", err)
		return 1
	}
	child := exec.Command("sleep", "1000")
	if err := child.Start(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	// The shell exits at once; its sleep is orphaned, as a daemon is.
	out, err := exec.Command("sh", "-c", "sleep 1001 >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Printf("pids %d %s\n", child.Process.Pid, strings.TrimSpace(string(out)))
	time.Sleep(time.Hour)
	return 0
}

// A parent killed with SIGKILL takes its children and detached grandchildren
// with it.
func TestChildrenDieWithAKilledParent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), envParent+"="+dir)
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pids ") {
		_ = parent.Process.Kill()
		t.Fatalf("parent said %q, %v", line, err)
	}
	var pids []int
	for _, f := range strings.Fields(strings.TrimPrefix(line, "pids ")) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	// Wait until the watchdog has recorded both, then kill the parent. Both
	// by PID: a scan that caught the short-lived shell before the grandchild
	// existed also lists two processes, and a grandchild forked after the
	// last scan before the kill is not one the watchdog can know of.
	waitFor(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "procguard-*.json"))
		if len(files) != 1 {
			return false
		}
		st, err := readState(files[0])
		if err != nil {
			return false
		}
		recorded := map[int]bool{}
		for _, c := range st.Children {
			recorded[c.PID] = true
		}
		for _, pid := range pids {
			if !recorded[pid] {
				return false
			}
		}
		return true
	})
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	for _, pid := range pids {
		waitFor(t, func() bool { _, ok := procOf(pid); return !ok })
	}
	waitFor(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "procguard-*.json"))
		return len(files) == 0
	})
}

// What a dead parent's state file lists (its watchdog died too) is stopped
// by the next Start in the same directory.
func TestReapStopsWhatADeadParentLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orphan := exec.Command("sleep", "1000")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = orphan.Wait() }()
	me, ok := procOf(orphan.Process.Pid)
	if !ok {
		t.Fatal("no /proc entry for the child")
	}
	gone := proc{PID: 1 << 22, Start: 1} // beyond pid_max: never alive
	if err := writeState(stateFile(dir, gone.PID), state{Parent: gone, Watchdog: gone, Children: []proc{me}}); err != nil {
		t.Fatal(err)
	}
	// A live parent's file is left alone.
	self, _ := procOf(os.Getpid())
	if err := writeState(stateFile(dir, self.PID), state{Parent: self, Watchdog: gone, Children: []proc{me}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stateFile(dir, self.PID)); err != nil {
		t.Fatal(err)
	}
	// First with only the live parent's file: nothing is stopped.
	live := stateFile(dir, self.PID)
	deadFile := stateFile(dir, gone.PID)
	if err := os.Rename(deadFile, deadFile+".aside"); err != nil {
		t.Fatal(err)
	}
	if stopped, err := Reap(dir); err != nil || len(stopped) != 0 {
		t.Fatalf("reaping a live parent's children: %v, %v", stopped, err)
	}
	if err := os.Rename(deadFile+".aside", deadFile); err != nil {
		t.Fatal(err)
	}
	stopped, err := Reap(dir)
	if err != nil || len(stopped) != 1 {
		t.Fatalf("Reap: stopped %v, %v; want the orphan", stopped, err)
	}
	waitFor(t, func() bool { _, ok := procOf(me.PID); return !ok })
	if _, err := os.Stat(deadFile); !os.IsNotExist(err) {
		t.Errorf("the dead parent's state file is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live parent's state file was removed: %v", err)
	}
}

// waitFor waits for an eventual outcome with a generous bound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
