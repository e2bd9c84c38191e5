package readme

import (
	"bufio"
	"bytes"
	"cmp"
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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/procguard"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/kebbinary"
	"github.com/kyma-keb/keb/testing/niceness"
)

// update makes TestREADME write the outputs it got into the documents (`make readme`).
var update = flag.Bool("update", false, "rewrite the pasted outputs of README.md and docs/guide from this run")

// docsFlag names the documents the test runs (comma-separated paths); without it README.md and every
// docs/guide chapter. A changed copy of one checks that the test fails on it (a mutation check).
var docsFlag = flag.String("docs", "", "the documents to run, comma-separated (default: README.md and docs/guide/*.md)")

// firstBlocks cuts a run short, for a quick check of the start of each document while editing it.
var firstBlocks = flag.Int("blocks", 0, "run only the first n blocks of each document (0: all); not with -update")

// repoRoot is the checkout, from this package's directory.
const repoRoot = "../.."

// documents returns the paths the test runs: README.md, then the guide's chapters by name.
func documents(t *testing.T) []string {
	t.Helper()
	if *docsFlag != "" {
		return strings.Split(*docsFlag, ",")
	}
	chapters, err := filepath.Glob(filepath.Join(repoRoot, "docs", "guide", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(chapters) == 0 {
		t.Fatal("docs/guide has no chapters")
	}
	sort.Strings(chapters)
	return append([]string{filepath.Join(repoRoot, "README.md")}, chapters...)
}

// docName is path as failures name it: relative to the checkout when it is in it.
func docName(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	root, _ := filepath.Abs(repoRoot)
	if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// blockTimeout bounds one block: the longest waits for a few runtimes.
const blockTimeout = 4 * time.Minute

func TestMain(m *testing.M) {
	// Many stacks at once: they take the CPU left over by make test's serial end-to-end suite (niceness package).
	niceness.Lower(10)
	flag.Parse()
	// keb dev and the bash running the walkthrough die with the test binary, even when `go test -timeout`
	// kills it.
	if err := procguard.Start(os.TempDir()); err != nil {
		fmt.Fprintln(os.Stderr, "readme:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// stacksFlag bounds how many documents run at once, each against its own `keb dev`.
var stacksFlag = flag.Int("stacks", defaultStacks, "how many documents run at once, each against its own keb dev")

// defaultStacks is how many `keb dev` stacks run side by side by default. The walkthrough mostly waits (on
// simulated clusters, polls, restarts), so four stacks keep two cores busy without one stack's waits
// growing past the blocks' timeouts (measured: docs/architecture.md, "Where the test suite's time goes").
const defaultStacks = 4

// document is one file the walkthrough runs: its path, text and runnable blocks.
type document struct {
	path   string
	raw    string
	blocks []Block
}

// runs reports whether a document has a block that runs; one without (a reference chapter) needs no stack.
func (d document) runs() bool {
	for _, b := range d.blocks {
		if b.Skip == "" {
			return true
		}
	}
	return false
}

// restarts is how many of a document's blocks restart keb dev.
func (d document) restarts() int {
	n := 0
	for _, b := range d.blocks {
		if b.Restart != nil && b.Skip == "" {
			n++
		}
	}
	return n
}

// TestREADME runs README.md's first-runtime path and every docs/guide chapter, each in a bash of its own
// against a fresh `keb dev` of its own (at most -stacks at once), and compares each block's output with the
// one pasted below it (see the package doc). With -update it rewrites them.
func TestREADME(t *testing.T) {
	var docs []document
	for _, p := range documents(t) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Parse(docName(p), string(raw))
		if err != nil {
			t.Fatal(err)
		}
		if *firstBlocks > 0 {
			if *update {
				t.Fatal("-update rewrites every block's output: it cannot run with -blocks")
			}
			blocks = blocks[:min(*firstBlocks, len(blocks))]
		}
		docs = append(docs, document{p, string(raw), blocks})
	}
	for _, tool := range []string{"bash", "curl", "jq", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough runs %s, which is missing: `make test` installs curl and jq as root "+
				"(sudo apt-get install -y curl jq postgresql-client)", tool)
		}
	}
	if *stacksFlag < 1 {
		t.Fatalf("-stacks %d: at least one document must run at a time", *stacksFlag)
	}
	keb := buildKeb(t)

	// Every document gets its own stack, so none sees what another left behind and they can run side by
	// side. The likely longest start first, so that the last to finish is not one that started last: those
	// that restart keb dev (a restart is a stack's start again), then by their number of blocks.
	order := slices.Clone(docs)
	slices.SortStableFunc(order, func(a, b document) int {
		return cmp.Or(cmp.Compare(b.restarts(), a.restarts()), cmp.Compare(len(b.blocks), len(a.blocks)))
	})
	start := time.Now()
	slots := make(chan struct{}, *stacksFlag)
	var wg sync.WaitGroup
	for _, d := range order {
		// A slot is taken here, in order, not in the goroutine, where the order would be the scheduler's.
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			// t.Run from several goroutines: each document is a subtest, failing on its own.
			t.Run(subtestName(d.path), func(t *testing.T) { runDocument(t, keb, d) })
		}()
	}
	wg.Wait()
	t.Logf("%d documents in %s, %d stacks at a time", len(docs), time.Since(start).Round(time.Second), *stacksFlag)
}

// subtestName names a document's subtest: README.md, or a chapter's file name without .md.
func subtestName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".md")
}

// runDocument runs one document's blocks in a fresh bash against a fresh `keb dev`, as a reader who starts
// `make run` and opens a terminal for it, and compares (or, with -update, rewrites) their outputs.
func runDocument(t *testing.T, keb string, d document) {
	start := time.Now()
	if !d.runs() {
		t.Logf("%s: no block runs, no keb dev started", docName(d.path))
		return
	}
	work := workDir(t, keb)
	dev := startKebDev(t, work)
	t.Logf("%s: keb dev ready in %s", docName(d.path), time.Since(start).Round(100*time.Millisecond))
	sh := newShell(t, work)
	failed := 0
	outputs := make([][]string, len(d.blocks))
	for i, b := range d.blocks {
		if b.Skip != "" {
			t.Logf("%s: not run: %s", b.Name(), b.Skip)
			continue
		}
		blockStart := time.Now()
		if b.Restart != nil {
			dev.restart(b.Restart)
			t.Logf("%s: keb dev restarted with %v in %s", b.Name(), b.Restart, time.Since(blockStart).Round(100*time.Millisecond))
			blockStart = time.Now()
		}
		got, err := sh.run(b.Script)
		if err != nil {
			t.Fatalf("%s: %v\nthe block:\n%s\nits output so far:\n%s", b.Name(), err, b.Script, strings.Join(got, "\n"))
		}
		t.Logf("%s: %d lines in %s", b.Name(), len(got), time.Since(blockStart).Round(100*time.Millisecond))
		outputs[i] = got
		diff := Compare(b.Output, got, b.Unordered)
		if *update {
			if diff != "" { // what `make readme` changes beyond IDs and times, for the one who reviews the diff
				t.Logf("%s: rewritten, its shape changed (- pasted, + got):\n%s", b.Name(), diff)
			}
			continue
		}
		if diff != "" {
			failed++
			t.Errorf("%s: the output differs from the pasted one (masked; - pasted, + got):\n%s\nthe block:\n%s",
				b.Name(), diff, b.Script)
		}
	}
	sh.close()
	t.Logf("%s: %d blocks in %s", docName(d.path), len(d.blocks), time.Since(start).Round(time.Second))
	if *update {
		rewrite(t, d.path, d.blocks, outputs)
	}
	if failed > 0 {
		t.Logf("%d of %d blocks differ; if the change is meant, `make readme` rewrites the pasted outputs", failed, len(d.blocks))
	}
}

// rewrite writes outputs into the document at path. It reads the file again, so that its prose may have
// been edited during the run; its blocks must still be the ones that ran.
func rewrite(t *testing.T, path string, ran []Block, outputs [][]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(docName(path), string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != len(ran) {
		t.Fatalf("%s: changed during the run (%d blocks, %d ran): not rewritten", docName(path), len(blocks), len(ran))
	}
	for i := range blocks {
		if blocks[i].Script != ran[i].Script {
			t.Fatalf("%s: changed during the run (%s is not the block that ran): not rewritten", docName(path), blocks[i].Name())
		}
	}
	if err := os.WriteFile(path, []byte(Rewrite(string(raw), blocks, outputs)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote the outputs of %d blocks in %s", len(blocks), docName(path))
}

// buildKeb returns the keb binary every document's stack runs as bin/keb: make test's, or one built once.
func buildKeb(t *testing.T) string {
	t.Helper()
	bin, err := kebbinary.Path(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// workDir is a checkout a document runs in: bin/keb (the one keb built), bin/k8s the test's Kubernetes
// binaries, docs the checkout's, and `keb dev`'s .keb its own.
func workDir(t *testing.T, keb string) string {
	t.Helper()
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(keb, filepath.Join(work, "bin", "keb")); err != nil {
		t.Fatal(err)
	}
	k8s, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(k8s, filepath.Join(work, "bin", "k8s")); err != nil {
		t.Fatal(err)
	}
	// The chapters source docs/guide/env.sh from the checkout.
	docs, err := filepath.Abs(filepath.Join(repoRoot, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(docs, filepath.Join(work, "docs")); err != nil {
		t.Fatal(err)
	}
	return work
}

// kebDev is `./bin/keb dev` running in a work directory as `make run` runs it, on a free port (the
// walkthrough reads it from .keb/dev-endpoints.json), until the test ends or a block restarts it.
type kebDev struct {
	t        *testing.T
	work     string
	port     int
	settings []string
	cmd      *exec.Cmd
	exited   chan error
	log      *os.File
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
	d.settings = settings
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

// cleanEnv is the test's environment without keb's settings, so that a developer's APP_* variables or keb
// login do not change what the walkthrough prints.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "APP_") && !strings.HasPrefix(kv, "KEB_") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	// Nor a developer's keb login: the walkthrough talks to its own keb dev.
	return append(env, "KEB_CONFIG="+filepath.Join(os.TempDir(), "keb-readme-test-no-login.json"))
}

// shell is one bash that runs the blocks one after another, so that what a block exports or defines is
// there for the next, as in a terminal.
type shell struct {
	dir   string
	stdin io.WriteCloser
	done  *bufio.Reader
	n     int
	close func()
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
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stdin.Close()
			cancel()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	return &shell{dir: dir, stdin: stdin, done: bufio.NewReader(stdout), close: stop}
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
