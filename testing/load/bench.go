package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/pgserver"
)

// benchConfig is `-mode bench`: everything `make bench` measures, in one run.
type benchConfig struct {
	dir           string
	binaries      []namedBinary
	port          int
	duration      time.Duration
	concurrencies []int
	pipelines     []pipelineRun
	pipelineConc  int
	credentials   bool
	k8sBinDir     string
	doc           string
	commit        string
	// profileFor > 0: a CPU profile of each pipeline keb over the first
	// profileFor of every pipeline cell, written next to its log.
	profileFor time.Duration
}

type namedBinary struct{ name, path string }

func parseBinaries(s string) ([]namedBinary, error) {
	var out []namedBinary
	for part := range strings.SplitSeq(s, ",") {
		name, path, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("-binaries: %q is not name=path", part)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		out = append(out, namedBinary{name, abs})
	}
	return out, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number: %w", part, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// row is one line of the bench table.
type row struct {
	cell, binary                string
	conc                        int
	rate                        float64 // requests (or operations) per second
	p50, p99                    time.Duration
	cpuPerReq                   float64 // broker CPU ms per request (or operation)
	sqlPerReq, apiPerReq, vsPGB float64 // NaN when not measured
	// elsewhere is the CPU ms per request of PostgreSQL, keb's control
	// plane, the stand-ins and the load generator (cpuElsewhere); NaN when
	// not measured.
	elsewhere [parts]float64
	load      string
	note      string
}

// kebProcess is a `keb dev` started by the bench.
type kebProcess struct {
	name, url string
	dir       string
	cmd       *exec.Cmd
	done      chan error
	loader    *loader
	probe     cpuProbe
	// simPID is its keb sim's process ID (0: a keb dev that runs the
	// stand-ins in its own process).
	simPID int
}

// startKeb starts `keb dev` and waits until it answers.
func startKeb(ctx context.Context, bin namedBinary, dir string, port int, dbURL string, args ...string) (*kebProcess, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := auth.LoadOrCreateDevKey(dir)
	if err != nil {
		return nil, err
	}
	token, err := key.Mint(devstack.Issuer, devstack.Audience, "bench", []string{auth.ScopeBrokerWrite}, 2*time.Hour)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "keb.log"))
	if err != nil {
		return nil, err
	}
	full := append([]string{"dev", "--port", strconv.Itoa(port), "--dir", dir, "--database-url", dbURL,
		"--log-format", "json", "--expiry-interval", "1000h"}, args...)
	cmd := exec.Command(bin.path, full...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// keb dies with the bench, and stops its control plane on SIGTERM.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin.path, err)
	}
	p := &kebProcess{name: bin.name, url: fmt.Sprintf("http://127.0.0.1:%d", port), dir: dir, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logFile.Close() }()
	p.loader = &loader{base: p.url, token: token, client: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 30 * time.Second}}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case err := <-p.done:
			return nil, fmt.Errorf("%s exited while starting (%v); see %s", bin.name, err, logFile.Name())
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if res, err := http.Get(p.url + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				// keb dev writes its endpoints before it serves.
				if e, err := devstack.LoadEndpoints(dir); err == nil {
					p.simPID = e.SimPID
				}
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not answer within 3 minutes; see %s", bin.name, logFile.Name())
		}
	}
}

func (p *kebProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// profile takes a CPU profile of keb over d (none when d is 0) in the
// background, into the keb's directory; the returned func waits for it.
func (p *kebProcess) profile(d time.Duration, name string) (wait func()) {
	if d <= 0 {
		return func() {}
	}
	addr, err := p.pprofAddr()
	if err != nil {
		fmt.Fprintf(os.Stderr, "no profile of %s: %v\n", p.name, err)
		return func() {}
	}
	out := filepath.Join(p.dir, strings.ReplaceAll(name, " ", "-")+".pprof")
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())))
		if err != nil {
			fmt.Fprintf(os.Stderr, "profiling %s: %v\n", p.name, err)
			return
		}
		defer res.Body.Close()
		f, err := os.Create(out)
		if err == nil {
			_, err = io.Copy(f, res.Body)
			f.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "profiling %s: %v\n", p.name, err)
			return
		}
		fmt.Printf("CPU profile of %s over the first %s of %s: %s\n", p.name, d, name, out)
	}()
	return func() { <-done }
}

// pprofAddr reads the address keb's profiling endpoints listen on from its
// log (it was started with --pprof-addr 127.0.0.1:0).
func (p *kebProcess) pprofAddr() (string, error) {
	b, err := os.ReadFile(filepath.Join(p.dir, "keb.log"))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		var rec struct {
			Msg     string `json:"msg"`
			Address string `json:"address"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && strings.HasPrefix(rec.Msg, "serving Go profiling endpoints") {
			return rec.Address, nil
		}
	}
	return "", errors.New("keb logged no pprof address")
}

// cpu is the process's user+system CPU time so far, from /proc/<pid>/stat.
func (p *kebProcess) cpu() time.Duration {
	st, _ := readProcStat(p.cmd.Process.Pid)
	return st.own
}

// counters reads keb's own work counters from /metrics; NaN when this keb
// does not export them (an older build).
func (p *kebProcess) counters() (statements, apiserver float64) {
	statements, apiserver = math.NaN(), math.NaN()
	res, err := http.Get(p.url + "/metrics")
	if err != nil {
		return
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "keb_database_statements_total":
			statements = v
		case strings.HasPrefix(name, "keb_apiserver_requests_total{"):
			if math.IsNaN(apiserver) {
				apiserver = 0
			}
			apiserver += v
		}
	}
	if math.IsNaN(apiserver) && !math.IsNaN(statements) {
		apiserver = 0 // exported, but no request made yet
	}
	return
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// measure runs fn as a phase of keb p and returns its row. Idle CPU (the
// process's background work, measured before the cells) is subtracted.
func measure(p *kebProcess, idle idleRates, cell string, conc int, dur time.Duration, fn func() (int, error), want int) (row, result) {
	load := loadavg()
	s0, _ := p.counters()
	e0, c0 := p.probe.read(p), p.cpu()
	res := p.loader.phase(conc, dur, 1<<30, fn, want)
	c1, e1 := p.cpu(), p.probe.read(p)
	s1, _ := p.counters()
	n := float64(len(res.lat))
	r := row{cell: cell, binary: p.name, conc: conc, load: load + "–" + loadavg(), sqlPerReq: math.NaN(), apiPerReq: math.NaN(), vsPGB: math.NaN(),
		elsewhere: [parts]float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}}
	if n == 0 {
		r.note = fmt.Sprintf("no successful request (%d errors: %v)", res.errs, res.lastErr)
		r.cpuPerReq = math.NaN()
		return r, res
	}
	slices.Sort(res.lat)
	r.rate = n / res.elapsed.Seconds()
	r.p50, r.p99 = res.lat[int(n*0.50)], res.lat[min(len(res.lat)-1, int(n*0.99))]
	cpuMS := float64(c1-c0)/float64(time.Millisecond) - idle.cpu*res.elapsed.Seconds()
	r.cpuPerReq = max(cpuMS, 0) / n
	r.elsewhere = e1.perRequest(e0, n, idle.elsewhere, res.elapsed)
	// The two /metrics scrapes are statement-free.
	r.sqlPerReq = (s1 - s0) / n
	if res.errs > 0 {
		r.note = fmt.Sprintf("%d errors, last: %v", res.errs, res.lastErr)
	}
	return r, res
}

// idleRates is a process's background work per second: CPU ms, SQL
// statements, apiserver requests (River's fetch polls, the leader's
// housekeeping, watches).
type idleRates struct {
	cpu, sql, api float64
	// elsewhere is cpuElsewhere's idle ms per second.
	elsewhere [parts]float64
}

func measureIdle(p *kebProcess, d time.Duration) idleRates {
	s0, a0 := p.counters()
	e0, c0 := p.probe.read(p), p.cpu()
	time.Sleep(d)
	c1, e1 := p.cpu(), p.probe.read(p)
	s1, a1 := p.counters()
	return idleRates{cpu: float64(c1-c0) / float64(time.Millisecond) / d.Seconds(),
		sql: (s1 - s0) / d.Seconds(), api: (a1 - a0) / d.Seconds(), elsewhere: e1.perRequest(e0, d.Seconds(), [parts]float64{}, 0)}
}

func runBench(ctx context.Context, cfg benchConfig) error {
	log := logrus.New()
	log.SetLevel(logrus.WarnLevel)
	if err := os.RemoveAll(cfg.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return err
	}
	started := time.Now()
	fmt.Printf("keb bench: %v, %s per cell, concurrency %v, pipeline %v; load average %s\n",
		cfg.binaries, cfg.duration, cfg.concurrencies, cfg.pipelines, loadavg())
	srv, err := pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(cfg.dir, "pgdata"), Log: log})
	if err != nil {
		return fmt.Errorf("starting PostgreSQL: %w", err)
	}
	defer func() { _ = srv.Stop(context.Background()) }()
	probe := newCPUProbe(filepath.Join(cfg.dir, "pgdata"))
	admin, err := pgx.Connect(ctx, srv.URL)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	dbURL := func(name string) (string, error) {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", fmt.Errorf("creating database %s: %w", name, err)
		}
		return strings.Replace(srv.URL, "/postgres?", "/"+name+"?", 1), nil
	}

	var rows []row
	pgbURL, err := dbURL("pgbench")
	if err != nil {
		return err
	}
	pgb, err := newPGBench(ctx, cfg.dir, pgbURL)
	if err != nil {
		return err
	}

	// Front door: every binary's `keb dev --workers 0` runs at once, and the
	// cells alternate between them so that both see the same machine. No
	// concurrencies: no front door (a pipeline-only run).
	var procs []*kebProcess
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	idle := map[string]idleRates{}
	for i, bin := range cfg.binaries {
		if len(cfg.concurrencies) == 0 {
			break
		}
		u, err := dbURL("keb_" + bin.name)
		if err != nil {
			return err
		}
		p, err := startKeb(ctx, bin, filepath.Join(cfg.dir, bin.name), cfg.port+i, u, "--k8s-bin-dir", cfg.k8sBinDir, "--workers", "0")
		if err != nil {
			return err
		}
		p.probe = probe
		procs = append(procs, p)
	}
	for _, p := range procs {
		idle[p.name] = measureIdle(p, 2*time.Second)
	}
	ids := map[string][]string{}
	order := func(i int) []*kebProcess {
		if i%2 == 1 {
			rev := slices.Clone(procs)
			slices.Reverse(rev)
			return rev
		}
		return procs
	}
	i := 0
	for _, c := range cfg.concurrencies {
		for _, p := range order(i) {
			l := p.loader
			r, _ := measure(p, idle[p.name], "GET catalog", c, cfg.duration, func() (int, error) {
				return l.do(http.MethodGet, "/oauth/cf-eu10/v2/catalog", "")
			}, http.StatusOK)
			rows = append(rows, r)
			// A platform polling the catalog revalidates the one it holds:
			// If-None-Match with its entity tag (the gzip body's, which Go's
			// client asks for), answered 304 without a body.
			_, h, err := l.doWith(http.MethodGet, "/oauth/cf-eu10/v2/catalog", "", nil)
			if etag := h.Get("ETag"); err == nil && etag != "" {
				revalidate := http.Header{"If-None-Match": {etag}}
				r, _ = measure(p, idle[p.name], "GET catalog, If-None-Match → 304", c, cfg.duration, func() (int, error) {
					code, _, err := l.doWith(http.MethodGet, "/oauth/cf-eu10/v2/catalog", "", revalidate)
					return code, err
				}, http.StatusNotModified)
				rows = append(rows, r)
			}
		}
		i++
	}
	for _, c := range cfg.concurrencies {
		var provRows []int
		for _, p := range order(i) {
			l := p.loader
			var mu sync.Mutex
			r, _ := measure(p, idle[p.name], "PUT provision → 202", c, cfg.duration, func() (int, error) {
				id := uuid.NewString()
				code, err := l.do(http.MethodPut, "/oauth/v2/service_instances/"+id+"?accepts_incomplete=true", provisionBody(azurePlanID, "bench-ga-"+id, false))
				if code == http.StatusAccepted {
					mu.Lock()
					ids[p.name] = append(ids[p.name], id)
					mu.Unlock()
				}
				return code, err
			}, http.StatusAccepted)
			rows = append(rows, r)
			provRows = append(provRows, len(rows)-1)
		}
		pg0 := probe.read(nil)
		res, err := pgb.run(ctx, c, cfg.duration)
		if err != nil && ctx.Err() == nil {
			// A machine too busy for pgbench to finish a transaction in the
			// cell (seen at a load average of 54): its row says so, and the
			// cells measured so far and after are kept.
			nan := math.NaN()
			rows = append(rows, row{cell: "pgbench single-insert", binary: "PostgreSQL", conc: c, rate: nan, p50: -1, p99: -1,
				cpuPerReq: nan, sqlPerReq: nan, apiPerReq: nan, vsPGB: nan, elsewhere: [parts]float64{nan, nan, nan, nan}, load: loadavg(),
				note: "pgbench finished no transaction in the cell"})
			i++
			continue
		}
		if err != nil {
			return err
		}
		tps, lat := res.tps, res.latency
		pgCPU := probe.read(nil).perRequest(pg0, res.transactions, [parts]float64{}, 0)
		pgCPU[1], pgCPU[2] = math.NaN(), float64(res.cpu)/float64(time.Millisecond)/res.transactions
		for _, k := range provRows {
			rows[k].vsPGB = rows[k].rate / tps
		}
		rows = append(rows, row{cell: "pgbench single-insert", binary: "PostgreSQL", conc: c, rate: tps, p50: lat,
			p99: -1, cpuPerReq: math.NaN(), sqlPerReq: 1, apiPerReq: math.NaN(), vsPGB: 1, elsewhere: pgCPU, load: loadavg(),
			note: "p50 column: average latency; client: pgbench"})
		i++
	}
	for _, c := range cfg.concurrencies {
		for _, p := range order(i) {
			l, own := p.loader, ids[p.name]
			if len(own) == 0 {
				return fmt.Errorf("%s accepted no provisioning to poll", p.name)
			}
			var next atomic.Int64
			r, _ := measure(p, idle[p.name], "GET last_operation", c, cfg.duration, func() (int, error) {
				return l.do(http.MethodGet, "/oauth/v2/service_instances/"+own[int(next.Add(1))%len(own)]+"/last_operation", "")
			}, http.StatusOK)
			rows = append(rows, r)
		}
		i++
	}
	for _, p := range procs {
		p.stop()
	}
	procs = nil

	// Pipeline: one binary at a time (all on the first port), workers on,
	// shared runtime, no delay.
	for _, bin := range cfg.binaries {
		u, err := dbURL("keb_pipe_" + bin.name)
		if err != nil {
			return err
		}
		pool, err := pgxpool.New(ctx, u)
		if err != nil {
			return err
		}
		args := []string{"--k8s-bin-dir", cfg.k8sBinDir, "--runtime-mode", "shared", "--runtime-delay", "0"}
		if cfg.profileFor > 0 {
			args = append(args, "--pprof-addr", "127.0.0.1:0")
		}
		p, err := startKeb(ctx, bin, filepath.Join(cfg.dir, bin.name+"-pipe"), cfg.port, u, args...)
		if err != nil {
			pool.Close()
			return err
		}
		p.probe = probe
		procs = append(procs, p)
		// One provisioning first, so that the shared runtime cluster is up
		// (zero infrastructure delay) before anything is timed.
		if _, err := benchPipeline(ctx, p, pool, idleRates{}, pipelineRun{plan: "azure", n: 1}, 1, cfg.credentials); err != nil {
			pool.Close()
			return err
		}
		idleRate := measureIdle(p, 5*time.Second)
		for _, run := range cfg.pipelines {
			stopProfile := p.profile(cfg.profileFor, run.String())
			r, err := benchPipeline(ctx, p, pool, idleRate, run, cfg.pipelineConc, cfg.credentials)
			stopProfile()
			if err != nil {
				pool.Close()
				return err
			}
			rows = append(rows, r)
		}
		pool.Close()
		p.stop()
		procs = procs[:0]
	}

	table := renderTable(rows, cfg, started, idle)
	fmt.Print(table)
	if cfg.doc != "" {
		if err := replaceSection(cfg.doc, table); err != nil {
			return err
		}
		fmt.Printf("\nupdated %s\n", cfg.doc)
	}
	return nil
}

// pipelineRun is one pipeline cell: n provisionings of plan (azure: one
// global account, so one claimed pool account for all; trial: a global
// account each, on the shared pool).
type pipelineRun struct {
	plan string
	n    int
}

func (r pipelineRun) String() string { return fmt.Sprintf("%d %s", r.n, r.plan) }

// parsePipelines reads -pipeline: comma-separated counts, each optionally
// prefixed with its plan ("1000" is "azure:1000"; "trial:200").
func parsePipelines(s string) ([]pipelineRun, error) {
	var out []pipelineRun
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		plan, count, ok := strings.Cut(part, ":")
		if !ok {
			plan, count = "azure", part
		}
		if plan != "azure" && plan != "trial" {
			return nil, fmt.Errorf("-pipeline %q: the plan is azure or trial", part)
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-pipeline %q: %q is not a positive count", part, count)
		}
		out = append(out, pipelineRun{plan: plan, n: n})
	}
	return out, nil
}

// benchPipeline accepts run.n provisionings and waits, reading the
// database (so that waiting costs the broker nothing), until all succeeded.
func benchPipeline(ctx context.Context, p *kebProcess, pool *pgxpool.Pool, idleRate idleRates, run pipelineRun, conc int, creds bool) (row, error) {
	n := run.n
	l := *p.loader
	l.planID, l.globalAccount, l.credentials = azurePlanID, "bench-ga-"+uuid.NewString()[:8], creds // one tenant: one pool account for all
	if run.plan == "trial" {
		l.planID = trialPlanID // a global account each (provisionOne)
	}
	load := loadavg()
	s0, a0 := p.counters()
	e0, c0 := p.probe.read(p), p.cpu()
	start := time.Now()
	ops, err := l.acceptAll(n, conc)
	if err != nil {
		return row{}, err
	}
	ids := make([]string, n)
	for k, o := range ops {
		ids[k] = o.inst
	}
	deadline := start.Add(15 * time.Minute)
	var done int
	var last time.Time
	var completions []time.Duration
	for {
		var failedN int
		err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'succeeded'), count(*) FILTER (WHERE state = 'failed'),
			coalesce(max(finished_at), now()) FROM operations WHERE instance_id = ANY($1) AND type = 'provision'`, ids).Scan(&done, &failedN, &last)
		if err != nil {
			return row{}, err
		}
		if failedN > 0 {
			return row{}, fmt.Errorf("%d of %d provisionings failed; see %s/keb.log", failedN, n, p.dir)
		}
		if done == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := last.Sub(start)
	c1, e1 := p.cpu(), p.probe.read(p)
	s1, a1 := p.counters()
	rows, err := pool.Query(ctx, `SELECT finished_at - created_at FROM operations WHERE instance_id = ANY($1) AND type = 'provision' ORDER BY 1`, ids)
	if err == nil {
		completions, err = pgx.CollectRows(rows, pgx.RowTo[time.Duration])
	}
	if err != nil {
		return row{}, err
	}
	secs := time.Since(start).Seconds()
	cpuMS := float64(c1-c0)/float64(time.Millisecond) - idleRate.cpu*secs
	r := row{cell: fmt.Sprintf("pipeline: %d %s provisionings", n, run.plan), binary: p.name, conc: conc,
		rate: float64(done) / elapsed.Seconds(), p50: completions[len(completions)/2], p99: completions[min(len(completions)-1, len(completions)*99/100)],
		cpuPerReq: max(cpuMS, 0) / float64(n), sqlPerReq: (s1 - s0 - idleRate.sql*secs) / float64(n),
		apiPerReq: (a1 - a0 - idleRate.api*secs) / float64(n), vsPGB: math.NaN(),
		elsewhere: e1.perRequest(e0, float64(n), idleRate.elsewhere, time.Since(start)),
		load:      load + "–" + loadavg(), note: "p50/p99: accept to success; idle work subtracted"}
	if done < n {
		r.note = fmt.Sprintf("only %d of %d succeeded within 15 minutes", done, n)
	}
	return r, nil
}

func provisionBody(planID, globalAccount string, creds bool) string {
	c := ""
	if creds {
		c = `,"sm_operator_credentials":{"clientid":"c","clientsecret":"s","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`
	}
	return fmt.Sprintf(`{"service_id":%q,"plan_id":%q,"context":{"globalaccount_id":%q,"subaccount_id":"bench-sa","user_id":"bench@example.com"%s},"parameters":{"name":"bench"}}`,
		serviceID, planID, globalAccount, c)
}

// pgBench runs pgbench's single-row insert against the bench's PostgreSQL.
type pgBench struct {
	bin, script, url string
}

func newPGBench(ctx context.Context, dir, url string) (*pgBench, error) {
	bin, err := pgbenchBinary()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE bench_insert (id bigserial PRIMARY KEY, v text)`); err != nil {
		return nil, fmt.Errorf("creating pgbench table: %w", err)
	}
	script := filepath.Join(dir, "insert.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO bench_insert (v) VALUES (md5(random()::text));\n"), 0o644); err != nil {
		return nil, err
	}
	return &pgBench{bin: bin, script: script, url: url}, nil
}

// pgbenchBinary prefers the pgbench of the server binaries keb runs.
func pgbenchBinary() (string, error) {
	if dir, err := pgserver.FindBinaries(); err == nil {
		if p := filepath.Join(dir, "pgbench"); fileExists(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	return "", errors.New("pgbench not found: install it with `apt-get install postgresql-contrib` (`make bench` does)")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

var (
	tpsRE = regexp.MustCompile(`tps = ([0-9.]+)`)
	latRE = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
	txRE  = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

// pgBenchResult is what one pgbench run measured.
type pgBenchResult struct {
	tps, transactions float64
	latency           time.Duration // average
	cpu               time.Duration // pgbench's own user+system time
}

func (b *pgBench) run(ctx context.Context, conc int, dur time.Duration) (pgBenchResult, error) {
	secs := max(1, int(dur.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, b.bin, "-n", "-f", b.script, "-c", strconv.Itoa(conc), "-j", "2", "-T", strconv.Itoa(secs), b.url)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return pgBenchResult{}, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m, tx := tpsRE.FindSubmatch(out), txRE.FindSubmatch(out)
	if m == nil || tx == nil {
		return pgBenchResult{}, fmt.Errorf("pgbench printed no tps or transaction count: %s", out)
	}
	r := pgBenchResult{cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	r.tps, _ = strconv.ParseFloat(string(m[1]), 64)
	r.transactions, _ = strconv.ParseFloat(string(tx[1]), 64)
	if m := latRE.FindSubmatch(out); m != nil {
		ms, _ := strconv.ParseFloat(string(m[1]), 64)
		r.latency = time.Duration(ms * float64(time.Millisecond))
	}
	return r, nil
}

func renderTable(rows []row, cfg benchConfig, started time.Time, idle map[string]idleRates) string {
	var b strings.Builder
	var names []string
	for _, bin := range cfg.binaries {
		path := bin.path
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, bin.path); err == nil {
				path = rel
			}
		}
		names = append(names, fmt.Sprintf("`%s` = %s (idle %.1f ms CPU/s)", bin.name, path, idle[bin.name].cpu))
	}
	fmt.Fprintf(&b, "\n`make bench` on commit %s, %s, %s per cell; binaries: %s.\n\n", cfg.commit,
		started.UTC().Format("2006-01-02 15:04 MST"), cfg.duration, strings.Join(names, ", "))
	b.WriteString("| cell | c | binary | req/s | p50 | p99 | broker CPU ms/req | stand-ins CPU ms/req | CPU elsewhere ms/req: PostgreSQL / apiservers + etcd / load generator | SQL/req | apiserver req/req | vs pgbench TPS | load avg | note |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	num := func(v float64, format string) string {
		if math.IsNaN(v) {
			return "–"
		}
		return fmt.Sprintf(format, v)
	}
	dur := func(d time.Duration) string {
		switch {
		case d < 0:
			return "–"
		case d >= 100*time.Second:
			return d.Round(time.Second).String()
		case d >= time.Second:
			return fmt.Sprintf("%.2f s", d.Seconds())
		}
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	for _, r := range rows {
		e := r.elsewhere
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s | %s | %s |\n", r.cell, r.conc, r.binary,
			num(r.rate, "%.1f"), dur(r.p50), dur(r.p99), num(r.cpuPerReq, "%.3f"), num(e[partStandIns], "%.3f"),
			num(e[partPostgres], "%.3f"), num(e[partControlPlane], "%.3f"), num(e[partClient], "%.3f"), num(r.sqlPerReq, "%.2f"),
			num(r.apiPerReq, "%.1f"), num(r.vsPGB, "%.2f×"), r.load, r.note)
	}
	return b.String()
}

// The bench's table replaces what is between these markers in -doc.
const (
	docBegin = "<!-- make bench: begin -->"
	docEnd   = "<!-- make bench: end -->"
)

func replaceSection(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q section", path, docBegin, docEnd)
	}
	out := s[:i+len(docBegin)] + "\n" + table + "\n" + s[j:]
	return os.WriteFile(path, []byte(out), 0o644)
}
