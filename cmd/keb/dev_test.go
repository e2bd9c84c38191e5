package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// keb dev with its port taken says so, names the flag and the variable that
// change it, and starts nothing (no PostgreSQL data directory appears).
func TestDevWithPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	code, _, errOut := runKeb("dev", "--port", fmt.Sprint(port), "--dir", dir)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, w := range []string{fmt.Sprintf("port %d", port), "--port", "APP_PORT"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr does not mention %q:\n%s", w, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pgdata")); !os.IsNotExist(err) {
		t.Errorf("keb dev started PostgreSQL although its port was taken: %v", err)
	}
}

// wait returns once the process has exited, for at most a minute: a bound
// against a hang, not a timing claim.
func (p kebProcess) wait(t *testing.T, after string) {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
	case <-time.After(time.Minute):
		t.Fatalf("keb dev (PID %d) did not stop within a minute of %s", p.Process.Pid, after)
	}
}

// startDev starts `keb dev` on dir as a process of its own and waits until
// it holds the directory's lock. A start that exits or hangs before that
// fails the test with the process's stderr (a hang: with its goroutines).
func startDev(t *testing.T, dir string, port int) kebProcess {
	t.Helper()
	bins, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	p := startKeb(t, io.Discard, &stderr, "dev", "--dir", dir, "--port", fmt.Sprint(port), "--k8s-bin-dir", bins)
	cmd, exited := p.Cmd, p.exited
	lock := filepath.Join(dir, devstack.LockFile)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	hang := time.After(2 * time.Minute) // a bound against a hang on a loaded machine, not a timing claim
	for {
		if b, _ := os.ReadFile(lock); strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, cmd.Process.Pid)) {
			return p
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("keb dev (PID %d) exited before it took its directory's lock (%v); its stderr:\n%s", cmd.Process.Pid, err, stderr.String())
		case <-hang:
			// Its state first: a stopped process (T, SIGSTOP) prints no
			// stack on SIGQUIT; one in the kernel (D) names its wait.
			state := processState(cmd.Process.Pid)
			// Go prints every goroutine's stack on SIGQUIT: where it hangs.
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case err := <-exited:
				exited <- err
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				// Wait copies the rest of its stderr (the stack a slow
				// SIGQUIT began) before it returns.
				exited <- <-exited
			}
			t.Fatalf("keb dev (PID %d, %s) never took its directory's lock; its stderr (with its goroutines' stacks):\n%s", cmd.Process.Pid, state, stderr.String())
		case <-tick.C:
		}
	}
}

// processState is what /proc says a process is doing: its state and the
// kernel function it waits in.
func processState(pid int) string {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	state := "state unknown"
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "State:"); ok {
			state = "state " + strings.TrimSpace(v)
		}
	}
	return fmt.Sprintf("%s, waiting in %q", state, string(wchan))
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// A second keb dev on the same directory says at once which one runs there
// and starts nothing; the first stops on SIGTERM while it is starting; one
// killed with SIGKILL leaves nothing that keeps the next one out.
func TestDevOwnsItsDirectory(t *testing.T) {
	// Not t.TempDir: PostgreSQL, stopped by a killed run's watchdog, may
	// still be writing into it when the test ends.
	dir, err := os.MkdirTemp("", "keb-dev-lock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	port := freePort(t)
	first := startDev(t, dir, port)
	code, _, errOut := runKeb("dev", "--dir", dir, "--port", fmt.Sprint(freePort(t)))
	if code != 1 {
		t.Errorf("second keb dev: exit code %d, want 1", code)
	}
	for _, w := range []string{"another keb dev is running", fmt.Sprintf("PID %d", first.Process.Pid), fmt.Sprintf("127.0.0.1:%d", port)} {
		if !strings.Contains(errOut, w) {
			t.Errorf("second keb dev's error does not say %q:\n%s", w, errOut)
		}
	}

	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	first.wait(t, "SIGTERM during its start-up")

	killed := startDev(t, dir, port)
	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.wait(t, "SIGKILL")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	// The lock file still names the killed run; the next one gets past it
	// to its own port check.
	code, _, errOut = runKeb("dev", "--dir", dir, "--port", fmt.Sprint(taken))
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("port %d", taken)) || strings.Contains(errOut, "another keb dev") {
		t.Errorf("keb dev after a killed one: exit %d, stderr:\n%s\nwant the port refusal, not the lock's", code, errOut)
	}
}
