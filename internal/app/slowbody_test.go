package app_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/httpapi"
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
// they are open, keb holds no more than those slots, and the process stays
// under 200 MiB. The server's read timeouts are set far beyond the test, so
// nothing but keb's own bounds can have freed a connection.
//
// The memory is the test process's growth over its resident size when the
// test starts (after a GC that hands freed memory back): the process holds
// both ends, keb and the slow senders, and the package's earlier tests (and
// the runs before it with -count) leave it larger than keb alone would be,
// which says nothing about what slow senders cost. Not parallel: parallel
// tests start only after it.
func TestSlowBodiesHoldNoConnections(t *testing.T) {
	b := setupWith(t, func(c *config.Config) {
		c.HTTP.ReadTimeout = 10 * time.Minute
		c.HTTP.FormReadTimeout = 10 * time.Minute
		c.HTTP.MaxConnections = slowBodyConnections
	}, io.Discard)
	b.checkUnauthenticatedRoutesListed()
	addr := b.srv.Listener.Addr().String()
	probe := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	runtime.GC()
	debug.FreeOSMemory()
	baseRSS := processRSS(t)
	var maxRSS int64
	var all []time.Duration
	for _, rt := range unauthenticatedRoutes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			held := func() int64 { return b.openedConns.Load() - b.closedConns.Load() }
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
					res, err := probe.Get(b.srv.URL + "/healthz")
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
			rss := processRSS(t)
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
		t.Fatalf("the process grew by %d MiB (from %d to %d MiB)", grown>>20, baseRSS>>20, maxRSS>>20)
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

// processRSS is the test process's resident memory (the server runs in it).
func processRSS(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
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
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
