// Command scaledb measures keb's PostgreSQL side at fleet scale (issue 30):
// GET /info/runtimes for every filter, cursor and page number, the metrics
// census, the trial expiry job and `keb runtimes --all`, on a database that
// testing/runtimesload has loaded with N instances. `make scale-db` runs it.
//
//	go run ./testing/scaledb -database-url "$URL" -label after -out after.json
//	go run ./testing/scaledb -doc docs/performance.md -commit abc1234 before.json after.json
//
// The listing is served in process: the handler keb mounts at /info/runtimes
// (runtimelisting.Handler over storage.Store) on a loopback HTTP server, with
// a pool whose tracer counts statements, so that each request's statements
// are counted exactly and no control plane is needed. The tool uses only
// APIs that older keb versions have too, so that `make scale-db` can build it
// against a previous commit (SCALE_BEFORE) and measure both on one database.
// -jobs also runs the trial expiry job (it changes the database: run it last).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/expiry"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimelisting"
	"github.com/kyma-keb/keb/internal/storage"
)

// idPrefix is testing/runtimesload's.
const idPrefix = "rtload-"

func main() {
	dbURL := flag.String("database-url", os.Getenv("APP_DATABASE_URL"), "keb database loaded by testing/runtimesload")
	label := flag.String("label", "after", "what this run measures (before, after)")
	out := flag.String("out", "", "write the results as JSON to this file (default: stdout)")
	n := flag.Int("n", 100, "measured requests per query")
	warmup := flag.Int("warmup", 10, "unmeasured requests per query before measuring")
	budget := flag.Duration("budget", 20*time.Second, "stop measuring a query after this long, whatever -n")
	jobs := flag.Bool("jobs", false, "also run the trial expiry job (changes the database)")
	keb := flag.String("keb", "", "keb binary: measure the resident memory of `keb runtimes --all` against the listing")
	doc := flag.String("doc", "", "render the JSON results given as arguments into this file's fleet-scale section")
	commit := flag.String("commit", "", "with -doc: the commit measured")
	extra := flag.String("extra", "", "with -doc: a file whose text is added to the section (e.g. testing/cleanupload's output)")
	adminURL := flag.String("admin-url", "", "with -create-db or -drop-db: a URL of the PostgreSQL to create the database in")
	createDB := flag.String("create-db", "", "create this database (dropping it first if it exists) and print its URL")
	dropDB := flag.String("drop-db", "", "drop this database")
	vacuum := flag.Bool("vacuum", false, "VACUUM ANALYZE the listing's tables of -database-url (after a migration's new index)")
	flag.Parse()
	ctx := context.Background()
	if *vacuum {
		conn, err := pgx.Connect(ctx, *dbURL)
		if err == nil {
			_, err = conn.Exec(ctx, `VACUUM (ANALYZE) instances, operations, instances_archive`)
			conn.Close(ctx)
		}
		if err != nil {
			fail(err)
		}
		return
	}
	if *createDB != "" || *dropDB != "" {
		if err := manageDB(ctx, *adminURL, *createDB, *dropDB); err != nil {
			fail(err)
		}
		return
	}
	if *doc != "" {
		if err := writeDoc(*doc, *commit, *extra, flag.Args()); err != nil {
			fail(err)
		}
		return
	}
	if *dbURL == "" {
		fail(fmt.Errorf("give -database-url or APP_DATABASE_URL"))
	}
	r, err := measure(ctx, *dbURL, *label, *n, *warmup, *budget, *jobs, *keb)
	if err != nil {
		fail(err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	if *out == "" {
		fmt.Println(string(b))
		return
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scaledb:", err)
	os.Exit(1)
}

// counter counts the statements the pool sends.
type counter struct{ n atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Results are one run's measurements.
type Results struct {
	Label     string        `json:"label"`
	Instances int           `json:"instances"`
	Archived  int           `json:"archived"`
	LoadStart string        `json:"loadStart"`
	LoadEnd   string        `json:"loadEnd"`
	Queries   []QueryResult `json:"queries"`
	Census    Timing        `json:"census"`
	Expiry    *JobResult    `json:"expiry,omitempty"`
	// Orchestrations are a dry run and a real one, with -jobs.
	Orchestrations []*OrchestrationResult `json:"orchestrations,omitempty"`
	CLI            *CLIResult             `json:"cli,omitempty"`
}

// QueryResult is one listing query's latencies and statements.
type QueryResult struct {
	Name       string  `json:"name"`
	Query      string  `json:"query"`
	Count      int     `json:"count"`
	Total      int     `json:"totalCount"`
	Requests   int     `json:"requests"`
	P50        float64 `json:"p50ms"`
	P99        float64 `json:"p99ms"`
	Max        float64 `json:"maxms"`
	Statements int64   `json:"statements"`
	// DBCPU is the PostgreSQL backend's CPU time per request; ToolCPU this
	// process's (the handler, JSON, and the HTTP client).
	DBCPU   float64 `json:"dbCPUms"`
	ToolCPU float64 `json:"toolCPUms"`
}

// Timing is a repeated database call's wall times and statements.
type Timing struct {
	Runs       int     `json:"runs"`
	Min        float64 `json:"minms"`
	Median     float64 `json:"medianms"`
	Max        float64 `json:"maxms"`
	Statements int64   `json:"statements"`
	// DBCPU is the database backend's CPU time per run, where measured.
	DBCPU float64 `json:"dbCPUms,omitempty"`
}

// JobResult is one run of a fleet job.
type JobResult struct {
	Items      int     `json:"items"`
	Seconds    float64 `json:"seconds"`
	Statements int64   `json:"statements"`
	Candidates Timing  `json:"candidates"`
}

// CLIResult is `keb runtimes --all` against the listing.
type CLIResult struct {
	Rows      int     `json:"rows"`
	Seconds   float64 `json:"seconds"`
	MaxRSSMiB float64 `json:"maxRSSMiB"`
	Output    string  `json:"output"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "-"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func measure(ctx context.Context, dbURL, label string, n, warmup int, budget time.Duration, jobs bool, keb string) (*Results, error) {
	cnt := &counter{}
	// One connection: every statement runs in the same PostgreSQL backend,
	// whose CPU time (from /proc) measures what the database spent on each
	// request, which the machine's load moves far less than latency does.
	pool, err := storage.Open(ctx, dbURL, 1, cnt)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return nil, err
	}
	dbCPU := func() time.Duration { return cpuTime(backend) }
	r := &Results{Label: label, LoadStart: loadAvg()}
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM instances), (SELECT count(*) FROM instances_archive)`).
		Scan(&r.Instances, &r.Archived); err != nil {
		return nil, err
	}
	if r.Instances < 1000 {
		return nil, fmt.Errorf("the database holds %d instances; load it with testing/runtimesload first", r.Instances)
	}
	// A key that makes no difference to the listing, which decrypts nothing.
	cipher, err := storage.NewCipher("0123456789abcdef0123456789abcdef")
	if err != nil {
		return nil, err
	}
	queue, err := process.NewQueue(pool, process.QueueConfig{}, logrus.New())
	if err != nil {
		return nil, err
	}
	store := storage.NewStore(pool, cipher, queue)
	srv := httptest.NewServer(runtimelisting.NewHandler(store, catalog.ServiceID, nil))
	defer srv.Close()
	client := srv.Client()
	get := func(query string) (listing, error) {
		res, err := client.Get(srv.URL + "/info/runtimes?" + query)
		if err != nil {
			return listing{}, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			return listing{}, err
		}
		if res.StatusCode != http.StatusOK {
			return listing{}, fmt.Errorf("GET /info/runtimes?%s: %d %s", query, res.StatusCode, body)
		}
		var l listing
		return l, json.Unmarshal(body, &l)
	}
	queries, err := listingQueries(get, r.Instances)
	if err != nil {
		return nil, err
	}
	for _, q := range queries {
		var l listing
		for range warmup {
			if l, err = get(q.query); err != nil {
				return nil, err
			}
		}
		lat := make([]time.Duration, 0, n)
		fewest := int64(-1)
		cpu0, self0 := dbCPU(), cpuTime(os.Getpid())
		start := time.Now()
		for i := 0; i < n && time.Since(start) < budget; i++ {
			before := cnt.n.Load()
			t0 := time.Now()
			if _, err := get(q.query); err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(t0))
			if s := cnt.n.Load() - before; fewest < 0 || s < fewest {
				fewest = s
			}
		}
		dbPer := ms(dbCPU()-cpu0) / float64(len(lat))
		selfPer := ms(cpuTime(os.Getpid())-self0) / float64(len(lat))
		slices.Sort(lat)
		pct := func(p float64) float64 { return ms(lat[min(len(lat)-1, int(float64(len(lat))*p))]) }
		r.Queries = append(r.Queries, QueryResult{Name: q.name, Query: q.query, Count: l.Count, Total: l.TotalCount,
			Requests: len(lat), P50: pct(0.50), P99: pct(0.99), Max: ms(lat[len(lat)-1]), Statements: fewest,
			DBCPU: dbPer, ToolCPU: selfPer})
		fmt.Fprintf(os.Stderr, "%s: %s p50 %.2f ms p99 %.2f ms, database CPU %.2f ms, handler and client CPU %.2f ms, %d statements (load %s)\n",
			label, q.name, pct(0.5), pct(0.99), dbPer, selfPer, fewest, loadAvg())
	}

	// The census behind /metrics, as the collector takes it on a refresh.
	cpu0 := dbCPU()
	r.Census, err = timed(cnt, 5, func() error { _, err := store.TakeCensus(ctx); return err })
	if err != nil {
		return nil, fmt.Errorf("census: %w", err)
	}
	r.Census.DBCPU = ms(dbCPU()-cpu0) / float64(r.Census.Runs)
	fmt.Fprintf(os.Stderr, "%s: census median %.1f ms, %d statements\n", label, r.Census.Median, r.Census.Statements)

	if keb != "" {
		if r.CLI, err = runCLI(ctx, keb, srv.URL); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "%s: keb runtimes --all: %d rows in %.1f s, max RSS %.1f MiB\n", label, r.CLI.Rows, r.CLI.Seconds, r.CLI.MaxRSSMiB)
	}
	if jobs {
		if r.Expiry, err = runExpiry(ctx, store, cnt); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "%s: expiry: %d expired in %.2f s, %d statements\n", label, r.Expiry.Items, r.Expiry.Seconds, r.Expiry.Statements)
		for _, dry := range []bool{true, false} {
			o, err := runOrchestration(ctx, pool, queue, cnt, dry)
			if err != nil {
				return nil, fmt.Errorf("orchestration (dry run %t): %w", dry, err)
			}
			r.Orchestrations = append(r.Orchestrations, o)
			fmt.Fprintf(os.Stderr, "%s: orchestration (dry run %t) of %d targets: first pass %.1f ms, %d statements; later passes %.1f ms, %d statements; %s\n",
				label, dry, o.Targets, o.FirstMs, o.FirstStatements, o.LaterMedianMs, o.LaterStatements, o.Description)
		}
	}
	r.LoadEnd = loadAvg()
	return r, nil
}

// timed runs f runs times and reports its wall times and its fewest
// statements.
func timed(cnt *counter, runs int, f func() error) (Timing, error) {
	var d []time.Duration
	fewest := int64(-1)
	for range runs {
		before := cnt.n.Load()
		t0 := time.Now()
		if err := f(); err != nil {
			return Timing{}, err
		}
		d = append(d, time.Since(t0))
		if s := cnt.n.Load() - before; fewest < 0 || s < fewest {
			fewest = s
		}
	}
	slices.Sort(d)
	return Timing{Runs: runs, Min: ms(d[0]), Median: ms(d[len(d)/2]), Max: ms(d[len(d)-1]), Statements: fewest}, nil
}

type listing struct {
	Count      int    `json:"count"`
	TotalCount int    `json:"totalCount"`
	Next       string `json:"next"`
}

type namedQuery struct{ name, query string }

// listingQueries are runtimesload's queries, with the deep pages scaled to
// the number of instances: at 100,000 they are page=751, state=all&page=751,
// plan=azure&page=200, plan=azure&region=westeurope&page=50 and page=1001.
func listingQueries(get func(string) (listing, error), instances int) ([]namedQuery, error) {
	scale := func(page int) int { return max(2, page*instances/100000) }
	first, err := get("page_size=100")
	if err != nil {
		return nil, err
	}
	deepPage := scale(750)
	deep, err := get(fmt.Sprintf("page=%d&page_size=100", deepPage))
	if err != nil {
		return nil, err
	}
	if first.Next == "" || deep.Next == "" {
		return nil, fmt.Errorf("page %d has no next cursor (total %d)", deepPage, deep.TotalCount)
	}
	const row = 12345
	pages := (first.TotalCount + 99) / 100
	return []namedQuery{
		{"no filter", "page_size=100"},
		{"account=<one of 500>", "account=" + idPrefix + "ga-007&page_size=100"},
		{"subaccount=<one>", fmt.Sprintf("subaccount=%ssa-%07d&page_size=100", idPrefix, row)},
		{"instance_id=<one>", fmt.Sprintf("instance_id=%sinst-%07d&page_size=100", idPrefix, row)},
		{"runtime_id=<one>", fmt.Sprintf("runtime_id=%srt-%07d&page_size=100", idPrefix, row)},
		{"shoot=<one>", fmt.Sprintf("shoot=c-%07x&page_size=100", row)},
		{"region=westeurope", "region=westeurope&page_size=100"},
		{"plan=azure", "plan=azure&page_size=100"},
		{"state=succeeded", "state=succeeded&page_size=100"},
		{"state=failed", "state=failed&page_size=100"},
		{"state=suspended", "state=suspended&page_size=100"},
		{"state=deprovisioned (archive)", "state=deprovisioned&page_size=100"},
		{"state=all (with archive)", "state=all&page_size=100"},
		{"plan=azure&region=westeurope", "plan=azure&region=westeurope&page_size=100"},
		{"account&state=succeeded&plan=aws", "account=" + idPrefix + "ga-007&state=succeeded&plan=aws&page_size=100"},
		{"page 2 by cursor", "next=" + url.QueryEscape(first.Next) + "&page_size=100"},
		{"page=2", "page=2&page_size=100"},
		{"next=<deep cursor>", "next=" + url.QueryEscape(deep.Next) + "&page_size=100"},
		{fmt.Sprintf("page=%d", deepPage+1), fmt.Sprintf("page=%d&page_size=100", deepPage+1)},
		{fmt.Sprintf("state=all&page=%d", deepPage+1), fmt.Sprintf("state=all&page=%d&page_size=100", deepPage+1)},
		{fmt.Sprintf("plan=azure&page=%d", scale(200)), fmt.Sprintf("plan=azure&page=%d&page_size=100", scale(200))},
		{fmt.Sprintf("plan=azure&region=westeurope&page=%d", scale(50)), fmt.Sprintf("plan=azure&region=westeurope&page=%d&page_size=100", scale(50))},
		{fmt.Sprintf("page=%d (beyond the end)", pages+1), fmt.Sprintf("page=%d&page_size=100", pages+1)},
		{fmt.Sprintf("page=%d (middle)", pages/2), fmt.Sprintf("page=%d&page_size=100", pages/2)},
		{"op_detail=all", "op_detail=all&page_size=100"},
		// Upstream KEB's options (issue 37): the expired trial and free
		// runtimes, and the bindings under upstream's name.
		{"expired=true", "expired=true&page_size=100"},
		{"expired=true&page=2", "expired=true&page=2&page_size=100"},
		{"with_bindings=true&op_detail=all", "with_bindings=true&op_detail=all&page_size=100"},
	}, nil
}

// runCLI runs `keb runtimes --all -o json` against the listing at base and
// reads its peak resident memory from the kernel's accounting of the child.
func runCLI(ctx context.Context, keb, base string) (*CLIResult, error) {
	cmd := exec.CommandContext(ctx, keb, "runtimes", "--all", "--page-size", "100", "-o", "json", "--url", base, "--token", "scaledb")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var doc struct {
		Data []json.RawMessage `json:"data"`
	}
	decErr := json.NewDecoder(stdout).Decode(&doc)
	rows := len(doc.Data)
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("keb runtimes --all: %w", err)
	}
	if decErr != nil {
		return nil, fmt.Errorf("keb runtimes --all: decoding its output: %w", decErr)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, fmt.Errorf("no resource usage of keb runtimes --all")
	}
	return &CLIResult{Rows: rows, Seconds: time.Since(t0).Seconds(), MaxRSSMiB: float64(ru.Maxrss) / 1024, Output: "json"}, nil
}

// runExpiry runs the trial expiry job once, as the leader's periodic job
// does (plans.yaml's 14 days for trial), and times its candidates query.
func runExpiry(ctx context.Context, store *storage.Store, cnt *counter) (*JobResult, error) {
	lifetime := 14 * 24 * time.Hour
	var res JobResult
	var err error
	res.Candidates, err = timed(cnt, 5, func() error {
		_, err := store.ExpiryCandidates(ctx, []string{catalog.TrialPlanName}, time.Now().Add(-lifetime), 500)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("expiry candidates: %w", err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	e := expiry.New(store, map[string]time.Duration{catalog.TrialPlanName: lifetime}, time.Hour, log)
	before := cnt.n.Load()
	t0 := time.Now()
	if res.Items, err = e.ExpireDue(ctx); err != nil {
		return nil, fmt.Errorf("expiry: %w", err)
	}
	res.Seconds = time.Since(t0).Seconds()
	res.Statements = cnt.n.Load() - before
	return &res, nil
}

// manageDB drops drop, or creates create afresh and prints its URL, in the
// PostgreSQL at adminURL.
func manageDB(ctx context.Context, adminURL, create, drop string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	name := create + drop
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return err
	}
	if create == "" {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return err
	}
	u.Path = "/" + name
	fmt.Println(u.String())
	return nil
}

// cpuTime is the user and system CPU time process pid has used, from
// /proc/<pid>/stat (in clock ticks of 10 ms); 0 where it cannot be read.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
