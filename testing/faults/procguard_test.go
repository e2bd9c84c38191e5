package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/procguard"
)

// envRigChild makes the test binary a child that starts a stack's
// PostgreSQL and then dies: the value is how ("timeout": go test's own
// timeout panic; "kill": it waits for the parent's SIGKILL).
const envRigChild = "KEB_FAULTS_RIG_CHILD"

// TestRigPostgresDiesWithItsTestBinary starts a stack's PostgreSQL in a
// child test binary, as newStack does, and ends the child the two ways a
// test binary ends without its cleanups: go test's -timeout (the binary
// panics and exits) and SIGKILL. Each time the PostgreSQL is gone soon
// after: no server is left running on the machine, holding its port and
// memory, after a test that timed out.
func TestRigPostgresDiesWithItsTestBinary(t *testing.T) {
	if os.Getenv(envRigChild) != "" {
		playRigChild(t)
		return
	}
	t.Parallel()
	for _, how := range []string{"timeout", "kill"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			guardDir := t.TempDir()
			args := []string{"-test.run=^TestRigPostgresDiesWithItsTestBinary$", "-test.v"}
			if how == "timeout" {
				// Long enough to start PostgreSQL on a busy machine; the
				// child then blocks until go test's timer panics.
				args = append(args, "-test.timeout=60s")
			}
			child := exec.Command(os.Args[0], args...)
			// The child's procguard keeps its state file in its own TMPDIR,
			// where this test reads what its watchdog recorded.
			child.Env = append(os.Environ(), envRigChild+"="+how, "TMPDIR="+guardDir)
			child.Dir = t.TempDir()
			out, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			child.Stderr = child.Stdout
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				exited <- child.Wait()
			}()
			var said []string
			pid, port := 0, 0
			for pid == 0 {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("the child ended before its PostgreSQL ran:\n%s", strings.Join(said, "\n"))
					}
					said = append(said, l)
					if _, err := fmt.Sscanf(l, "postmaster %d port %d", &pid, &port); err != nil {
						pid = 0
					}
				case <-time.After(3 * time.Minute):
					_ = child.Process.Kill()
					t.Fatalf("the child did not start its PostgreSQL:\n%s", strings.Join(said, "\n"))
				}
			}
			t.Cleanup(func() {
				// Whatever the test found, nothing is left behind.
				if procguard.Running(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			// The watchdog lists the postmaster before the child dies: a
			// process started after its last scan is one it cannot know.
			waitFor(t, time.Minute, "the child's watchdog to record its postmaster", func() bool {
				return recorded(guardDir, child.Process.Pid, pid)
			})
			if how == "kill" {
				if err := child.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
			var err2 error
			select {
			case err2 = <-exited:
			case <-time.After(3 * time.Minute):
				_ = child.Process.Kill()
				t.Fatal("the child did not end")
			}
			for l := range lines {
				said = append(said, l)
			}
			if how == "timeout" && !strings.Contains(strings.Join(said, "\n"), "test timed out") {
				t.Fatalf("the child ended (%v) without go test's timeout panic:\n%s", err2, strings.Join(said, "\n"))
			}
			waitFor(t, time.Minute, fmt.Sprintf("the postmaster (PID %d) to be gone", pid), func() bool {
				return !procguard.Running(pid)
			})
			if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
				c.Close()
				t.Errorf("something still listens on the dead stack's PostgreSQL port %d", port)
			}
			t.Logf("%s: the child ended (%v); its postmaster %d is gone", how, err2, pid)
		})
	}
}

// recorded reports whether the watchdog of parent lists pid in its state
// file in dir.
func recorded(dir string, parent, pid int) bool {
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("procguard-%d.json", parent)))
	if err != nil {
		return false
	}
	var st struct {
		Children []struct {
			PID int `json:"pid"`
		} `json:"children"`
	}
	if json.Unmarshal(b, &st) != nil {
		return false
	}
	for _, c := range st.Children {
		if c.PID == pid {
			return true
		}
	}
	return false
}

// playRigChild is the child's part: it starts a PostgreSQL as newStack
// does, says its postmaster's PID and port, and blocks until it is killed
// or its timeout panics.
func playRigChild(t *testing.T) {
	pg := startPostgres(context.Background(), t, filepath.Join(t.TempDir(), "pgdata"))
	b, err := os.ReadFile(filepath.Join(pg.DataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	fmt.Printf("postmaster %d port %d\n", pid, pg.Port)
	time.Sleep(time.Hour)
}
