package app_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/httpapi"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// unauthenticatedRoutes are the routes keb serves to anyone: they answer
// without a bearer token, so slow bodies sent to them are the attack of
// issue 23's first defect. TestSlowBodiesHoldNoConnections checks that the
// router has no other.
var unauthenticatedRoutes = []struct{ method, path string }{
	{http.MethodGet, "/healthz"},
	{http.MethodGet, "/readyz"},
	{http.MethodGet, "/version"},
	{http.MethodGet, "/metrics"},
	{http.MethodGet, "/openapi.yaml"},
	{http.MethodGet, "/console"},
	{http.MethodGet, "/console/instances/x"},
	{http.MethodGet, "/console/runtimes"},
	{http.MethodGet, "/console/orchestrations"},
	{http.MethodGet, "/console/orchestrations/x"},
	{http.MethodGet, "/console/pool"},
	{http.MethodGet, "/console/events"},
	{http.MethodGet, "/console/login"},
	{http.MethodPost, "/console/login"},
	{http.MethodPost, "/console/logout"},
	{http.MethodPost, "/oauth2/token"},
	{http.MethodPost, "/dev/cis/oauth/token"},
	{http.MethodGet, "/dev/cis/v1.0/events"},
	{http.MethodGet, "/dev/cis/v2.0/events"},
	{http.MethodGet, "/dev/cis/events/v2/events/central"},
	{http.MethodGet, "/dev/cis/entitlements/v1/services/kymaruntime/plans/azure/subaccounts/sa-1/entitlements"},
	{http.MethodPost, "/dev/cis/entitlements"},
	{http.MethodPost, "/dev/cis/events"},
	// The kubeconfig answers an allowed origin without a token, and its
	// preflight anyone.
	{http.MethodGet, "/kubeconfig/x"},
	{http.MethodOptions, "/kubeconfig/x"},
	// What every other route answers without a token (401), and what
	// answers unknown paths and methods.
	{http.MethodPut, "/oauth/v2/service_instances/x"},
	{http.MethodPost, "/upgrade/kyma"},
	{http.MethodGet, "/info/runtimes"},
	{http.MethodPost, "/no/such/route"},
	{http.MethodDelete, "/healthz"},
}

// slowBodyConnections is how many slow senders each route gets at once:
// APP_HTTP_MAX_CONNECTIONS, every connection keb serves.
const slowBodyConnections = 1000

// Issue 23, defect 1: 1,000 connections sending their bodies slowly to
// each unauthenticated route in turn. keb answers each at once (and lets the
// connection go) or reads it in one of its few form slots (the rest are
// refused at once), so /healthz keeps answering on fresh connections while
// they are open, keb holds no more than those slots, and the server's
// process stays under 200 MiB. The server's read timeouts are set far beyond
// the test, so nothing but keb's own bounds can have freed a connection.
//
// The server runs in a process of its own (slowBodyServer), and the memory
// is that process's growth over its resident size once it is set up (after
// a GC that hands freed memory back): the test process holds the slow
// senders' ends, and the package's other tests (and the runs before this one
// with -count) grow it too, which says nothing about what slow senders cost
// keb. Not parallel: parallel tests start only after it, so they do not
// slow the probes down.
func TestSlowBodiesHoldNoConnections(t *testing.T) {
	srv := startSlowBodyServer(t)
	addr := srv.addr
	url := "http://" + addr
	probe := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	srv.ask(t, "settle")
	baseRSS := processRSS(t, srv.cmd.Process.Pid)
	var maxRSS int64
	var all []time.Duration
	for _, rt := range unauthenticatedRoutes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			held := func() int64 { return srv.held(t) }
			base := held()
			// Probe /healthz on fresh connections all along.
			stop := make(chan struct{})
			var latencies []time.Duration
			var probeErr error
			var probes sync.WaitGroup
			probes.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						if i > 0 {
							return
						}
					default:
					}
					start := time.Now()
					res, err := probe.Get(url + "/healthz")
					if err != nil {
						probeErr = err
						return
					}
					res.Body.Close()
					latencies = append(latencies, time.Since(start))
					if res.StatusCode != http.StatusOK {
						probeErr = fmt.Errorf("healthz: %d", res.StatusCode)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			})
			head := rt.method + " " + rt.path + " HTTP/1.1\r\nHost: keb\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
				"Content-Length: 10000\r\n\r\ntoken=eyJhbGciOi" // under every route's body limit
			conns := make([]net.Conn, 0, slowBodyConnections)
			answers := make(chan int, slowBodyConnections)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range slowBodyConnections {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatalf("connection %d: %v", len(conns)+1, err)
				}
				conns = append(conns, c)
				if _, err := io.WriteString(c, head); err != nil {
					t.Fatalf("connection %d: %v", len(conns), err)
				}
				go func() {
					res, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						answers <- 0
						return
					}
					res.Body.Close()
					answers <- res.StatusCode
				}()
			}
			// keb answers every slow sender at once except those whose
			// bodies it reads, at most FormSlots of them, which it holds.
			answered, statuses := 0, map[int]int{}
			for deadline := time.Now().Add(2 * time.Minute); answered < slowBodyConnections-httpapi.FormSlots; {
				select {
				case code := <-answers:
					answered++
					statuses[code]++
				case <-time.After(time.Until(deadline)):
					t.Fatalf("after 2 minutes %d of %d slow senders are answered (%v): keb holds the others", answered, slowBodyConnections, statuses)
				}
			}
			// The answered connections are released by keb, not by the
			// client (which still holds them open); a route that reads no
			// form answers the rest too.
			for i := 0; held()-base > httpapi.FormSlots+2; i++ {
				if i == 600 {
					t.Fatalf("keb holds %d connections of answered slow senders", held()-base)
				}
				time.Sleep(100 * time.Millisecond)
			}
			for more := true; more; {
				select {
				case code := <-answers:
					answered++
					statuses[code]++
				case <-time.After(500 * time.Millisecond):
					more = false
				}
			}
			rss := processRSS(t, srv.cmd.Process.Pid)
			maxRSS = max(maxRSS, rss)
			close(stop)
			probes.Wait()
			if probeErr != nil {
				t.Fatalf("/healthz while %d slow senders were connected: %v", slowBodyConnections, probeErr)
			}
			for _, c := range conns {
				c.Close()
			}
			for i := 0; held() > base; i++ {
				if i == 600 {
					t.Fatalf("keb still holds %d connections after the slow senders left", held()-base)
				}
				time.Sleep(100 * time.Millisecond)
			}
			slices.Sort(latencies)
			all = append(all, latencies...)
			t.Logf("answers %v, %d held; /healthz: %d probes, median %v, slowest %v; RSS %d MiB", statuses, slowBodyConnections-answered, len(latencies),
				latencies[len(latencies)/2].Round(time.Millisecond), latencies[len(latencies)-1].Round(time.Millisecond), rss>>20)
		})
	}
	slices.Sort(all)
	if len(all) > 0 {
		t.Logf("/healthz over all routes: %d probes, median %v, 99th percentile %v, slowest %v; peak RSS %d MiB, %d MiB at the start", len(all),
			all[len(all)/2].Round(time.Millisecond), all[len(all)*99/100].Round(time.Millisecond), all[len(all)-1].Round(time.Millisecond), maxRSS>>20, baseRSS>>20)
	}
	if grown := maxRSS - baseRSS; grown > 200<<20 {
		t.Fatalf("the server's process grew by %d MiB (from %d to %d MiB)", grown>>20, baseRSS>>20, maxRSS>>20)
	}
}

// checkUnauthenticatedRoutesListed fails the test for a route that answers
// a request without a token otherwise than 401 and is not in
// unauthenticatedRoutes.
func (b *bundle) checkUnauthenticatedRoutesListed() {
	b.t.Helper()
	routed := b.app.Handler.(interface{ Router() *mux.Router })
	err := routed.Router().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tmpl, err := route.GetPathTemplate()
		if err != nil {
			return nil
		}
		methods, _ := route.GetMethods()
		if len(methods) == 0 {
			methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
		}
		path := pathVar.ReplaceAllString(strings.ReplaceAll(tmpl, "{region}", "cf-eu10"), "x")
		for _, m := range methods {
			req, _ := http.NewRequest(m, b.srv.URL+path, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode == http.StatusUnauthorized {
				continue
			}
			listed := slices.ContainsFunc(unauthenticatedRoutes, func(r struct{ method, path string }) bool {
				// A prefix (keb dev's stand-ins) is covered by its listed routes.
				return r.method == m && r.path == path || strings.HasSuffix(tmpl, "/") && strings.HasPrefix(r.path, tmpl)
			})
			if !listed {
				b.t.Errorf("%s %s answers %d without a token and is not in unauthenticatedRoutes", m, tmpl, res.StatusCode)
			}
		}
		return nil
	})
	if err != nil {
		b.t.Fatal(err)
	}
}

var pathVar = regexp.MustCompile(`\{[^}]+\}`)

// processRSS is the resident memory of the process pid.
func processRSS(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// Every route that answers without a token is one the slow senders of
// TestSlowBodiesHoldNoConnections try.
func TestUnauthenticatedRoutesListed(t *testing.T) {
	t.Parallel()
	setup(t).checkUnauthenticatedRoutesListed()
}

// envSlowBodyServer makes the test binary, run for TestSlowBodyServer, the
// server of TestSlowBodiesHoldNoConnections.
const envSlowBodyServer = "KEB_TEST_SLOW_BODY_SERVER"

// TestSlowBodyServer is no test of its own: it is the keb server of
// TestSlowBodiesHoldNoConnections, in a process of its own so that its
// memory can be measured apart from the slow senders'. It prints the
// address it serves on, then answers lines on stdin until stdin closes:
// "settle" (collect garbage and hand freed memory back) and "held" (the
// connections the server holds open).
func TestSlowBodyServer(t *testing.T) {
	if os.Getenv(envSlowBodyServer) != "1" {
		t.Skip("the server process of TestSlowBodiesHoldNoConnections; it runs only as that test starts it")
	}
	b := setupWith(t, func(c *config.Config) {
		c.HTTP.ReadTimeout = 10 * time.Minute
		c.HTTP.FormReadTimeout = 10 * time.Minute
		c.HTTP.MaxConnections = slowBodyConnections
	}, io.Discard)
	fmt.Printf("listening %s\n", b.srv.Listener.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "settle":
			runtime.GC()
			debug.FreeOSMemory()
			fmt.Println("settled")
		case "held":
			fmt.Printf("held %d\n", b.openedConns.Load()-b.closedConns.Load())
		default:
			t.Fatalf("unknown request %q", in.Text())
		}
	}
}

// slowBodyServer is TestSlowBodyServer's process, seen from the test.
type slowBodyServer struct {
	cmd    *exec.Cmd
	addr   string
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
	mu     sync.Mutex // one question at a time
}

// startSlowBodyServer starts TestSlowBodyServer's process, on this test
// binary's database server. It dies with the test process (a parent-death
// signal) and stops when the test ends (its stdin closes).
func startSlowBodyServer(t *testing.T) *slowBodyServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSlowBodyServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), envSlowBodyServer+"=1", pgtest.EnvURL+"="+pgtest.AdminURL())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &slowBodyServer{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		p.in.Close()
		select {
		case <-exited:
		case <-time.After(time.Minute): // a bound against a hang, not a timing claim
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("the server process did not stop within a minute of its stdin closing; its stderr:\n%s", p.stderr.String())
		}
	})
	line := p.line(t)
	addr, ok := strings.CutPrefix(line, "listening ")
	if !ok {
		t.Fatalf("the server process said %q", line)
	}
	p.addr = addr
	return p
}

// line reads the server process's next line of answer.
func (p *slowBodyServer) line(t *testing.T) string {
	t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the server process's answer: %v (so far %q); its stderr:\n%s", err, line, p.stderr.String())
	}
	return strings.TrimSuffix(line, "\n")
}

// ask sends the server process one request and returns its answer.
func (p *slowBodyServer) ask(t *testing.T, q string) string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintln(p.in, q); err != nil {
		t.Fatalf("asking the server process %q: %v; its stderr:\n%s", q, err, p.stderr.String())
	}
	return p.line(t)
}

// held is how many connections the server process holds open.
func (p *slowBodyServer) held(t *testing.T) int64 {
	t.Helper()
	a := p.ask(t, "held")
	n, err := strconv.ParseInt(strings.TrimPrefix(a, "held "), 10, 64)
	if err != nil {
		t.Fatalf("the server process answered %q to held", a)
	}
	return n
}
