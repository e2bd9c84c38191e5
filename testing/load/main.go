// Command load drives a running keb with provision accepts and last_operation
// polls at a chosen concurrency, and prints throughput and latency
// percentiles. It only talks to the URL it is given (loopback by default),
// and stops by itself after -duration or -requests.
//
//	go run ./testing/load -concurrency 16 -duration 20s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/devstack"
)

const (
	serviceID   = "47c9dcbf-ff30-448e-ab36-d3bad66ba281"
	azurePlanID = "4deee563-e5ec-4731-b9b1-53b42d855f0c"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "broker base URL")
	token := flag.String("token", os.Getenv("KEB_TOKEN"), "bearer token (default: minted with the dev key in -dir)")
	dir := flag.String("dir", ".keb", "dev state directory of the running `keb dev`")
	conc := flag.Int("concurrency", 16, "concurrent clients")
	dur := flag.Duration("duration", 15*time.Second, "how long to run each phase")
	maxReq := flag.Int("requests", 200000, "upper bound of requests per phase")
	mode := flag.String("mode", "osb", "osb: accept and poll throughput; pipeline: whole provisionings per second; waiting: first-step latency behind -n waiting operations; "+
		"bench: start PostgreSQL and `keb dev` for each of -binaries and measure catalog, accept, poll, pgbench and the pipeline (`make bench`); "+
		"accept: `keb serve --workers 0` of each of -binaries against the PostgreSQL at -pg, keb's CPU per PUT → 202 at -concurrencies, -rounds interleaved rounds, pgbench beside")
	creds := flag.Bool("credentials", true, "pipeline/waiting: send sm_operator_credentials, so the final step writes into the runtime")
	plan := flag.String("plan", "trial", "pipeline/waiting: trial (a global account each, shared pool accounts) or azure (one global account, one pool account)")
	samples := flag.Int("samples", 30, "waiting: new provisionings measured")
	ops := flag.Int("n", 100, "operations for -mode pipeline and waiting")
	binaries := flag.String("binaries", "keb=bin/keb", "bench: name=path of each keb binary to measure, comma-separated (e.g. before=/tmp/keb-main,after=bin/keb)")
	benchDir := flag.String("bench-dir", ".keb/bench", "bench: state directory, emptied first (PostgreSQL data, each keb's dev dir and log)")
	port := flag.Int("port", 58080, "bench: the first keb's port; further binaries use the next ports")
	concs := flag.String("concurrencies", "1,16,64", "bench: concurrencies of the front-door cells")
	pipelineNs := flag.String("pipeline", "50,1000", "bench: provisionings per pipeline run, each optionally plan:count with plan azure (the default) or trial, e.g. 50,1000,trial:200 (empty: none)")
	k8sBin := flag.String("k8s-bin-dir", "bin/k8s", "bench: kube-apiserver and etcd for keb dev")
	doc := flag.String("doc", "", "bench: markdown file whose `make bench` section is replaced by the table")
	commit := flag.String("commit", "unknown", "bench: the commit measured, printed with the table")
	rounds := flag.Int("rounds", 3, "accept: rounds of cells")
	pgURL := flag.String("pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "accept: an existing PostgreSQL's admin URL (a database per binary is created in it)")
	pprofCell := flag.String("pprof", "", "accept: name:concurrency:seconds, a CPU profile of that binary's cell in the last round, into -bench-dir")
	profileFor := flag.Duration("profile", 0, "bench: take a CPU profile of each pipeline keb over the first this long of every pipeline cell (0: none)")
	flag.Parse()
	if *mode == "accept" {
		cfg := acceptConfig{rounds: *rounds, duration: *dur, dir: *benchDir, pgURL: *pgURL, port: *port, profile: *pprofCell}
		var err error
		if cfg.binaries, err = parseBinaries(*binaries); err != nil {
			fail(err)
		}
		if cfg.concurrencies, err = parseInts(*concs); err != nil {
			fail(err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := runAccept(ctx, cfg); err != nil {
			stop()
			fail(err)
		}
		return
	}
	if *mode == "bench" {
		cfg := benchConfig{dir: *benchDir, port: *port, duration: *dur, pipelineConc: *conc, credentials: *creds,
			doc: *doc, commit: *commit, profileFor: *profileFor}
		var err error
		if cfg.k8sBinDir, err = filepath.Abs(*k8sBin); err != nil {
			fail(err)
		}
		if cfg.binaries, err = parseBinaries(*binaries); err != nil {
			fail(err)
		}
		if cfg.concurrencies, err = parseInts(*concs); err != nil {
			fail(err)
		}
		if cfg.pipelines, err = parsePipelines(*pipelineNs); err != nil {
			fail(err)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := runBench(ctx, cfg); err != nil {
			stop()
			fail(err)
		}
		return
	}

	if *token == "" {
		key, err := auth.LoadOrCreateDevKey(*dir)
		if err != nil {
			fail(err)
		}
		if *token, err = key.Mint(devstack.Issuer, devstack.Audience, "load", []string{auth.ScopeBrokerWrite}, time.Hour); err != nil {
			fail(err)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc * 2}, Timeout: 30 * time.Second}
	planID := trialPlanID
	if *plan == "azure" {
		planID = azurePlanID
	}
	l := &loader{base: strings.TrimRight(*base, "/"), token: *token, client: client, credentials: *creds,
		planID: planID, globalAccount: "load-ga-" + uuid.NewString()[:8]}
	switch *mode {
	case "pipeline":
		l.pipeline(*ops, *conc)
		return
	case "waiting":
		l.waiting(*ops, *conc, *samples)
		return
	}

	var ids sync.Map
	var n atomic.Int64
	fmt.Printf("keb load: %s, concurrency %d, %s per phase\n", l.base, *conc, *dur)
	l.phase(*conc, *dur, *maxReq, func() (int, error) {
		return l.do(http.MethodGet, "/oauth/v2/catalog", "")
	}, http.StatusOK).print("catalog (GET, 200)")
	prov := l.phase(*conc, *dur, *maxReq, func() (int, error) {
		id := uuid.NewString()
		body := fmt.Sprintf(`{"service_id":%q,"plan_id":%q,"context":{"globalaccount_id":"load-ga-%s","subaccount_id":"load-sa","user_id":"load@example.com"},"parameters":{"name":"load"}}`,
			serviceID, azurePlanID, id)
		code, err := l.do(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true", body)
		if code == http.StatusAccepted {
			ids.Store(n.Add(1)-1, id)
		}
		return code, err
	}, http.StatusAccepted)
	prov.print("provision (PUT, 202)")

	total := n.Load()
	if total == 0 {
		fail(fmt.Errorf("no provision was accepted; is keb running at %s?", l.base))
	}
	var next atomic.Int64
	poll := l.phase(*conc, *dur, *maxReq, func() (int, error) {
		v, _ := ids.Load(next.Add(1) % total)
		return l.do(http.MethodGet, "/oauth/v2/service_instances/"+v.(string)+"/last_operation", "")
	}, http.StatusOK)
	poll.print("last_operation (GET, 200)")
}

type loader struct {
	base, token string
	client      *http.Client
	credentials bool
	// planID and globalAccount are what -mode pipeline and waiting provision.
	planID, globalAccount string
}

func (l *loader) do(method, path, body string) (int, error) {
	code, _, err := l.doWith(method, path, body, nil)
	return code, err
}

// doWith is do with extra request headers; it returns the answer's headers.
func (l *loader) doWith(method, path, body string, header http.Header) (int, http.Header, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, l.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	if res.StatusCode >= 400 {
		var e map[string]any
		_ = json.NewDecoder(res.Body).Decode(&e)
		return res.StatusCode, res.Header, fmt.Errorf("%d: %v", res.StatusCode, e["description"])
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header, nil
}

type result struct {
	lat     []time.Duration
	errs    int
	lastErr error
	elapsed time.Duration
}

// phase runs fn from conc workers until dur passes or max requests are made.
func (l *loader) phase(conc int, dur time.Duration, max int, fn func() (int, error), want int) result {
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var issued atomic.Int64
	var mu sync.Mutex
	var res result
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var errs int
			var lastErr error
			for ctx.Err() == nil && issued.Add(1) <= int64(max) {
				t0 := time.Now()
				code, err := fn()
				d := time.Since(t0)
				if err != nil || code != want {
					errs++
					lastErr = err
					continue
				}
				lat = append(lat, d)
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errs += errs
			if lastErr != nil {
				res.lastErr = lastErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func (r result) print(name string) {
	slices.Sort(r.lat)
	pct := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*p))]
	}
	fmt.Printf("%-26s ok=%d errors=%d throughput=%.0f req/s p50=%s p99=%s\n", name, len(r.lat), r.errs,
		float64(len(r.lat))/r.elapsed.Seconds(), pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond))
	if r.lastErr != nil {
		fmt.Printf("  last error: %v\n", r.lastErr)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "load:", err)
	os.Exit(1)
}
