package readme

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/procguard"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// update makes TestREADME write the outputs it got into README.md (`make readme`).
var update = flag.Bool("update", false, "rewrite README.md's pasted outputs from this run")

// readmePath is the README the test runs: another one checks that a changed copy fails (a mutation check).
var readmePath = flag.String("readme", "../../README.md", "the README to run")

// firstBlocks cuts a run short, for a quick check of the start of the walkthrough while editing it.
var firstBlocks = flag.Int("blocks", 0, "run only the first n blocks (0: all); not with -update")

// blockTimeout bounds one block: the longest waits for a few runtimes.
const blockTimeout = 4 * time.Minute

func TestMain(m *testing.M) {
	flag.Parse()
	// keb dev and the bash running the walkthrough die with the test binary, even when `go test -timeout`
	// kills it.
	if err := procguard.Start(os.TempDir()); err != nil {
		fmt.Fprintln(os.Stderr, "readme:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// TestREADME runs the walkthrough's blocks in order in one bash against a fresh `keb dev` and compares
// each output with the one pasted below the block (see the package doc). With -update it rewrites them.
func TestREADME(t *testing.T) {
	path, err := filepath.Abs(*readmePath)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if *firstBlocks > 0 {
		if *update {
			t.Fatal("-update rewrites every block's output: it cannot run with -blocks")
		}
		blocks = blocks[:min(*firstBlocks, len(blocks))]
	}
	for _, tool := range []string{"bash", "curl", "jq", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough runs %s, which is missing: `make test` installs curl and jq as root "+
				"(sudo apt-get install -y curl jq postgresql-client)", tool)
		}
	}
	work := workDir(t)
	dev := startKebDev(t, work)
	sh := newShell(t, work)

	outputs := make([][]string, len(blocks))
	failed := 0
	for i, b := range blocks {
		if b.Skip != "" {
			t.Logf("%s: not run: %s", b.Name(), b.Skip)
			continue
		}
		start := time.Now()
		if b.Restart != nil {
			dev.restart(b.Restart)
			t.Logf("%s: keb dev restarted with %v in %s", b.Name(), b.Restart, time.Since(start).Round(100*time.Millisecond))
			start = time.Now()
		}
		got, err := sh.run(b.Script)
		if err != nil {
			t.Fatalf("%s: %v\nthe block:\n%s\nits output so far:\n%s", b.Name(), err, b.Script, strings.Join(got, "\n"))
		}
		t.Logf("%s: %d lines in %s", b.Name(), len(got), time.Since(start).Round(100*time.Millisecond))
		outputs[i] = got
		d := Compare(b.Output, got, b.Unordered)
		if *update {
			if d != "" { // what `make readme` changes beyond IDs and times, for the one who reviews the diff
				t.Logf("%s: rewritten, its shape changed (- pasted, + got):\n%s", b.Name(), d)
			}
			continue
		}
		if d != "" {
			failed++
			t.Errorf("%s: the output differs from the pasted one (masked; - pasted, + got):\n%s\nthe block:\n%s",
				b.Name(), d, b.Script)
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(Rewrite(string(raw), blocks, outputs)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the outputs of %d blocks in %s", len(blocks), path)
		return
	}
	if failed > 0 {
		t.Logf("%d of %d blocks differ; if the change is meant, `make readme` rewrites the pasted outputs", failed, len(blocks))
	}
}

// workDir is the checkout the walkthrough runs in: bin/keb built from this tree, bin/k8s the test's
// Kubernetes binaries, and `keb dev`'s .keb.
func workDir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(work, "bin", "keb"), "github.com/kyma-keb/keb/cmd/keb").CombinedOutput()
	if err != nil {
		t.Fatalf("building keb: %v\n%s", err, out)
	}
	k8s, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(k8s, filepath.Join(work, "bin", "k8s")); err != nil {
		t.Fatal(err)
	}
	return work
}

// kebDev is `./bin/keb dev` running in a work directory as `make run` runs it, on a free port (the
// walkthrough reads it from .keb/dev-endpoints.json), until the test ends or a block restarts it.
type kebDev struct {
	t      *testing.T
	work   string
	port   int
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
}

func startKebDev(t *testing.T, work string) *kebDev {
	t.Helper()
	d := &kebDev{t: t, work: work, port: freePort(t)}
	d.start(nil)
	t.Cleanup(d.stop)
	return d
}

// restart stops keb dev and starts it again on the same port and directory with settings (NAME=VALUE)
// added to its environment, as the reader does with `NAME=VALUE make run`.
func (d *kebDev) restart(settings []string) {
	d.t.Helper()
	d.stop()
	d.start(settings)
}

func (d *kebDev) start(settings []string) {
	t := d.t
	t.Helper()
	log, err := os.OpenFile(filepath.Join(d.work, "keb-dev.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("./bin/keb", "dev", "--port", strconv.Itoa(d.port))
	cmd.Dir, cmd.Stdout, cmd.Stderr = d.work, log, log
	cmd.Env = append(append(cleanEnv(), "APP_LOG_FORMAT=json"), settings...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.cmd, d.log, d.exited = cmd, log, make(chan error, 1)
	go func() { d.exited <- cmd.Wait() }()
	tail := func() string {
		b, _ := os.ReadFile(log.Name())
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		return string(b)
	}
	deadline := time.Now().Add(4 * time.Minute)
	for {
		select {
		case err := <-d.exited:
			d.exited <- err
			t.Fatalf("keb dev exited: %v\n%s", err, tail())
		case <-time.After(500 * time.Millisecond):
		}
		if ready(d.work) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keb dev not ready after 4 minutes:\n%s", tail())
		}
	}
}

// stop stops keb dev as Ctrl-C does, and waits for it (and so for its PostgreSQL, etcd and apiservers).
func (d *kebDev) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(time.Minute):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	d.log.Close()
	d.cmd = nil
}

// ready reports whether the keb dev in work has written its endpoints and answers /readyz with 200.
func ready(work string) bool {
	b, err := os.ReadFile(filepath.Join(work, ".keb", "dev-endpoints.json"))
	if err != nil {
		return false
	}
	var e struct {
		BrokerURL string `json:"broker_url"`
	}
	if json.Unmarshal(b, &e) != nil || e.BrokerURL == "" {
		return false
	}
	res, err := http.Get(e.BrokerURL + "/readyz")
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cleanEnv is the test's environment without keb's settings, so that a developer's APP_* variables do not
// change what the walkthrough prints.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "APP_") && !strings.HasPrefix(kv, "KEB_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return env
}

// shell is one bash that runs the blocks one after another, so that what a block exports or defines is
// there for the next, as in a terminal.
type shell struct {
	dir   string
	stdin io.WriteCloser
	done  *bufio.Reader
	n     int
}

func newShell(t *testing.T, work string) *shell {
	t.Helper()
	dir := filepath.Join(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc")
	cmd.Dir = work
	cmd.Env = cleanEnv()
	// The bash and what the blocks start are one process group, killed together at the end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cancel()
		_ = cmd.Wait()
	})
	return &shell{dir: dir, stdin: stdin, done: bufio.NewReader(stdout)}
}

// run runs script in the shell and returns what it printed, stdout and stderr interleaved as on a
// terminal.
func (s *shell) run(script string) ([]string, error) {
	s.n++
	file := filepath.Join(s.dir, fmt.Sprintf("block-%d.sh", s.n))
	out := filepath.Join(s.dir, fmt.Sprintf("block-%d.out", s.n))
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		return nil, err
	}
	// Sourced, so that its exports and functions stay; stdin is not the session's.
	if _, err := fmt.Fprintf(s.stdin, "source %s >%s 2>&1 </dev/null; echo done-%d\n", file, out, s.n); err != nil {
		return nil, fmt.Errorf("the shell is gone: %w", err)
	}
	line := make(chan string, 1)
	go func() {
		l, _ := s.done.ReadString('\n')
		line <- l
	}()
	var err error
	select {
	case l := <-line:
		if strings.TrimSpace(l) != fmt.Sprintf("done-%d", s.n) {
			err = fmt.Errorf("the shell ended (did the block exit?): %q", l)
		}
	case <-time.After(blockTimeout):
		err = fmt.Errorf("the block did not finish within %s", blockTimeout)
	}
	b, rerr := os.ReadFile(out)
	if rerr != nil && err == nil {
		err = rerr
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"), err
}
