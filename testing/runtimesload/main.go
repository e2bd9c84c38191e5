// Command runtimesload loads a keb database with many instances and measures
// GET /info/runtimes on them (issue 4: a page of 100 answers in p99 <= 25 ms
// with 100,000 instances).
//
//	go run ./testing/runtimesload -load 100000 -database-url "$APP_DATABASE_URL"
//	go run ./testing/runtimesload -measure
//
// -load writes straight into the database with COPY (instances with the
// state, shoot name, resolved parameters and expiry the store would have
// written, one provisioning each, some deprovisionings, some suspended
// trials, and archived instances, which are in instances_archive only, as
// Store.ArchiveAndRemove leaves them) and runs VACUUM ANALYZE. -measure only
// talks to -url (loopback by default) and sends a bounded number of
// requests: -n per query after -warmup, sequentially. -explain prints EXPLAIN ANALYZE of the
// statements the store builds (storage.RuntimesCountSQL, RuntimesPageSQL), run as the store runs
// them (one transaction, storage.RuntimesTxSettings).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/runtimelisting"
	"github.com/kyma-keb/keb/internal/storage"
)

const (
	idPrefix = "rtload-"
	accounts = 500
)

type plan struct {
	id, name, provider string
	regions            []string
}

var plans = []plan{
	{catalog.AzurePlanID, catalog.AzurePlanName, "Azure", []string{"westeurope", "northeurope", "eastus", "swedencentral"}},
	{catalog.AWSPlanID, catalog.AWSPlanName, "AWS", []string{"eu-central-1", "us-east-1", "ap-southeast-1"}},
	{catalog.GCPPlanID, catalog.GCPPlanName, "GCP", []string{"europe-west3", "us-central1"}},
	{catalog.AzureLitePlanID, catalog.AzureLitePlanName, "Azure", []string{"westeurope", "eastus"}},
}

// trialPlan is given to one instance in trialEvery, at most one per global
// account (the database allows no more); one trial in expiredEvery that is
// older than trialDuration and provisioned has expired and is suspended.
var trialPlan = plan{catalog.TrialPlanID, catalog.TrialPlanName, "Azure", []string{"westeurope", "eastus"}}

const (
	trialEvery    = 200
	expiredEvery  = 4
	trialDuration = 14 * 24 * time.Hour
)

var machineTypes = map[string]string{"Azure": "Standard_D4s_v5", "AWS": "m6i.xlarge", "GCP": "n2-standard-4"}

var platformRegions = []string{"cf-eu10", "cf-us10", "cf-eu20", "cf-ap21"}

func main() {
	load := flag.Int("load", 0, "insert this many instances (e.g. 100000) into -database-url, then ANALYZE")
	archived := flag.Int("archived", -1, "archived instances to insert with -load (default: a tenth of -load)")
	dbURL := flag.String("database-url", os.Getenv("APP_DATABASE_URL"), "keb database (printed by `keb dev` as \"database:\")")
	measure := flag.Bool("measure", false, "measure GET /info/runtimes on -url")
	explain := flag.String("explain", "", "EXPLAIN ANALYZE in -database-url the statements keb runs for a page: \"-\" for no filter, a global account ID, or a query string as /info/runtimes takes it (e.g. \"state=failed&plan=azure\")")
	base := flag.String("url", "http://127.0.0.1:8080", "keb base URL")
	token := flag.String("token", os.Getenv("KEB_TOKEN"), "bearer token with cld:read (default: minted with the dev key in -dir)")
	dir := flag.String("dir", ".keb", "dev state directory of the running `keb dev`")
	n := flag.Int("n", 200, "measured requests per query")
	warmup := flag.Int("warmup", 20, "unmeasured requests per query before measuring")
	budget := flag.Duration("budget", 60*time.Second, "stop measuring a query after this long, whatever -n")
	flag.Parse()
	if *load == 0 && !*measure && *explain == "" {
		fmt.Fprintln(os.Stderr, "runtimesload: give -load N, -measure and/or -explain")
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	if *load > 0 {
		if *dbURL == "" {
			fail(fmt.Errorf("-load needs -database-url or APP_DATABASE_URL"))
		}
		if *archived < 0 {
			*archived = *load / 10
		}
		if err := loadDB(ctx, *dbURL, *load, *archived); err != nil {
			fail(err)
		}
	}
	if *explain != "" {
		if err := explainPage(ctx, *dbURL, *explain); err != nil {
			fail(err)
		}
	}
	if *measure {
		if *token == "" {
			key, err := auth.LoadOrCreateDevKey(*dir)
			if err != nil {
				fail(err)
			}
			if *token, err = key.Mint(devstack.Issuer, devstack.Audience, "runtimesload", []string{auth.ScopeCLDRead}, time.Hour); err != nil {
				fail(err)
			}
		}
		m := &measurer{base: strings.TrimRight(*base, "/"), token: *token,
			client: &http.Client{Timeout: 30 * time.Second}}
		if err := m.run(*n, *warmup, *budget); err != nil {
			fail(err)
		}
	}
}

// loadDB inserts n instances and archived rows with COPY in batches.
func loadDB(ctx context.Context, dbURL string, n, archived int) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var existing int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM instances WHERE instance_id LIKE $1`, idPrefix+"%").Scan(&existing); err != nil {
		return err
	}
	if existing > 0 {
		return fmt.Errorf("database already holds %d %s* instances; load into a fresh keb dev database", existing, idPrefix)
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(4, 100000))
	// Instances are spread over the last year, oldest first.
	origin := time.Now().Add(-365 * 24 * time.Hour).UTC()
	step := 365 * 24 * time.Hour / time.Duration(n+archived+1)

	instCols := []string{"instance_id", "runtime_id", "global_account_id", "subaccount_id", "user_id", "service_id",
		"plan_id", "plan_name", "platform_region", "provider", "provider_region", "parameters", "context",
		"dashboard_url", "created_at", "updated_at", "state", "shoot_name", "resolved_parameters", "expired_at"}
	opCols := []string{"operation_id", "instance_id", "type", "state", "description", "stage", "finished_stages",
		"error_message", "deadline", "data", "temporary", "created_at", "updated_at", "finished_at"}
	stages := []string{"initialization", "create_runtime", "check_runtime", "create_kyma", "sap_btp_manager"}

	const batch = 10000
	states := map[string]int{}
	for lo := 0; lo < n; lo += batch {
		hi := min(n, lo+batch)
		var inst, ops [][]any
		for i := lo; i < hi; i++ {
			p := plans[rng.IntN(len(plans))]
			region := p.regions[rng.IntN(len(p.regions))]
			ga := fmt.Sprintf("%sga-%03d", idPrefix, rng.IntN(accounts))
			// A trial replaces the drawn plan without drawing, so the other
			// rows are the same as before trials were loaded.
			trial := i%trialEvery == 0 && i/trialEvery < accounts
			if trial {
				p, region = trialPlan, trialPlan.regions[(i/trialEvery)%len(trialPlan.regions)]
				ga = fmt.Sprintf("%sga-%03d", idPrefix, i/trialEvery)
			}
			id := fmt.Sprintf("%sinst-%07d", idPrefix, i)
			rid := fmt.Sprintf("%srt-%07d", idPrefix, i)
			created := origin.Add(time.Duration(i) * step)
			params := fmt.Sprintf(`{"name":"rt-%d","region":%q}`, i, region)
			ctxJSON := fmt.Sprintf(`{"globalaccount_id":%q,"subaccount_id":"%ssa-%07d"}`, ga, idPrefix, i)
			// The shoot name is chosen by the provisioning's first step and
			// stored both in its data and on the instance.
			shootName := fmt.Sprintf("c-%07x", i)
			shoot := fmt.Sprintf(`{"shootName":%q}`, shootName)
			// Mix: 85% succeeded, 5% provisioning, 5% failed, 5% deprovisioning.
			r := rng.IntN(100)
			platformRegion := platformRegions[rng.IntN(len(platformRegions))]
			pState, desc, errMsg, done := "succeeded", "Operation succeeded", "", stages
			var pFinished any = created.Add(20 * time.Minute)
			switch {
			case r < 5:
				pState, desc, done, pFinished = "in progress", "Operation in progress", stages[:2], nil
			case r < 10:
				pState, desc, errMsg, done = "failed", "Operation failed", "check_runtime: cluster did not become ready", stages[:2]
			}
			updated := created.Add(20 * time.Minute)
			ops = append(ops, []any{id + "-p", id, "provision", pState, desc, done[len(done)-1], done, errMsg,
				created.Add(time.Hour), shoot, false, created, updated, pFinished})
			// The state is what the store writes with these operations
			// (Store.Finish, CreateDeprovisioning, ChangeInstance).
			state := map[string]string{"succeeded": "succeeded", "in progress": "provisioning", "failed": "failed"}[pState]
			resolved := "{}" // written when a provisioning succeeds
			if pState == "succeeded" {
				resolved = fmt.Sprintf(`{"name":"rt-%d","region":%q,"providerRegion":%q,"provider":%q,"machineType":%q,`+
					`"autoScalerMin":3,"autoScalerMax":20,"zones":["1","2","3"],"kymaVersion":"2.20.0",`+
					`"components":[],"shootName":%q}`, i, region, region, p.provider, machineTypes[p.provider], shootName)
			}
			var expired any
			switch {
			case r >= 10 && r < 15:
				dc := created.Add(24 * time.Hour)
				ops = append(ops, []any{id + "-d", id, "deprovision", "in progress", "Operation in progress",
					"deprovisioning", []string{}, "", dc.Add(time.Hour), shoot, false, dc, dc, nil})
				// Live, without an archive row: the archive step archives
				// and removes the instance at once, so an instance is in
				// one table only.
				state, updated = "deprovisioning", dc
			case trial && r >= 15 && (i/trialEvery)%expiredEvery == 0 && time.Since(created) > trialDuration:
				// Expired: a temporary deprovisioning removed the runtime
				// and suspended the instance.
				ex := created.Add(trialDuration)
				ops = append(ops, []any{id + "-s", id, "deprovision", "succeeded", "Operation succeeded",
					"remove_runtime", []string{"remove_runtime"}, "", ex.Add(time.Hour), shoot, true, ex,
					ex.Add(10 * time.Minute), ex.Add(10 * time.Minute)})
				state, updated, expired = "suspended", ex.Add(10*time.Minute), ex
			}
			states[state]++
			inst = append(inst, []any{id, rid, ga, fmt.Sprintf("%ssa-%07d", idPrefix, i), "user@example.com",
				catalog.ServiceID, p.id, p.name, platformRegion, p.provider, region,
				params, ctxJSON, "https://console.example.com/?kubeconfigID=" + rid, created, updated,
				state, shootName, resolved, expired})
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"instances"}, instCols, pgx.CopyFromRows(inst)); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("copying instances: %w", err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"operations"}, opCols, pgx.CopyFromRows(ops)); err != nil {
			_ = tx.Rollback(ctx)
			return fmt.Errorf("copying operations: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}

	arcCols := []string{"instance_id", "runtime_id", "global_account_id", "subaccount_id", "plan_id", "plan_name",
		"platform_region", "provider", "provider_region", "shoot_name", "provisioning_state", "last_deprovisioning_id",
		"instance_created_at", "deprovisioning_started_at", "archived_at"}
	var arc [][]any
	for j := 0; j < archived; j++ {
		p := plans[rng.IntN(len(plans))]
		region := p.regions[rng.IntN(len(p.regions))]
		// Archived instances (in the archive only, their instances rows
		// and operations gone) are interleaved with live ones in the order.
		created := origin.Add(time.Duration(rng.IntN(n+archived)) * step).Add(time.Duration(j%1000) * time.Microsecond)
		// Archived IDs interleave with live ones in ID order, as UUIDs do
		// in production (with a separate prefix every archived ID would sort
		// before every live one, and a plan merging the two tables' keys
		// would stop after one step instead of reading both).
		id := fmt.Sprintf("%sinst-%07d-a", idPrefix, j*max(1, n/max(1, archived)))
		arc = append(arc, []any{id, fmt.Sprintf("%sart-%07d", idPrefix, j), fmt.Sprintf("%sga-%03d", idPrefix, rng.IntN(accounts)),
			fmt.Sprintf("%sasa-%07d", idPrefix, j), p.id, p.name, platformRegions[rng.IntN(len(platformRegions))],
			p.provider, region, fmt.Sprintf("a-%07x", j), "succeeded", id + "-d", created,
			created.Add(48 * time.Hour), created.Add(49 * time.Hour)})
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"instances_archive"}, arcCols, pgx.CopyFromRows(arc)); err != nil {
		return fmt.Errorf("copying archive: %w", err)
	}
	loaded := time.Since(start)
	// VACUUM as well as ANALYZE: it sets the visibility map that autovacuum
	// would set soon after a bulk load anyway, so that measurements see the
	// steady state (index-only scans possible) rather than the first minute.
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) instances, operations, instances_archive`); err != nil {
		return err
	}
	fmt.Printf("loaded %d instances (%v) and %d archived in %s, VACUUM ANALYZE done after %s\n",
		n, states, archived, loaded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}

type measurer struct {
	base, token string
	client      *http.Client
}

type listing struct {
	Count      int    `json:"count"`
	TotalCount int    `json:"totalCount"`
	Next       string `json:"next"`
}

func (m *measurer) get(query string) (listing, error) {
	req, err := http.NewRequest(http.MethodGet, m.base+"/info/runtimes?"+query, nil)
	if err != nil {
		return listing{}, err
	}
	req.Header.Set("Authorization", "Bearer "+m.token)
	res, err := m.client.Do(req)
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

// loadAvg is the 1-minute load average, to judge how busy the machine was
// during a measurement ("-" where /proc/loadavg does not exist).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "-"
	}
	return strings.Fields(string(b))[0]
}

func (m *measurer) run(n, warmup int, budget time.Duration) error {
	// The second page by cursor: the next of the first page.
	first, err := m.get("page_size=100")
	if err != nil {
		return err
	}
	// A cursor deep in the listing: the next of offset page 750 (rows
	// 75,001-75,100 in the default order).
	deep, err := m.get("page=750&page_size=100")
	if err != nil {
		return err
	}
	if first.Next == "" || deep.Next == "" {
		return fmt.Errorf("page 750 has no next cursor (count %d, total %d); load 100,000 instances first", deep.Count, deep.TotalCount)
	}
	// One row of the loaded data for the filters that pick single rows.
	const row = 12345
	queries := []struct{ name, query string }{
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
		{"next=<cursor after row 75,100>", "next=" + url.QueryEscape(deep.Next) + "&page_size=100"},
		{"page=751 (offset 75,000)", "page=751&page_size=100"},
		{"state=all&page=751 (offset 75,000, live + archive)", "state=all&page=751&page_size=100"},
		{"plan=azure&page=200 (offset 19,900)", "plan=azure&page=200&page_size=100"},
		{"plan=azure&region=westeurope&page=50 (offset 4,900)", "plan=azure&region=westeurope&page=50&page_size=100"},
		{"page=1001 (beyond the end)", "page=1001&page_size=100"},
		{"op_detail=all", "op_detail=all&page_size=100"},
	}
	fmt.Printf("GET %s/info/runtimes, %d sequential requests per query after %d warm-up; load average %s at start\n",
		m.base, n, warmup, loadAvg())
	fmt.Printf("| query | count | totalCount | n | p50 | p99 | max | load avg (1 min) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, q := range queries {
		var l listing
		for range warmup {
			if l, err = m.get(q.query); err != nil {
				return err
			}
		}
		lat := make([]time.Duration, 0, n)
		start := time.Now()
		for i := 0; i < n && time.Since(start) < budget; i++ {
			t0 := time.Now()
			if _, err := m.get(q.query); err != nil {
				return err
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		pct := func(p float64) time.Duration {
			return lat[min(len(lat)-1, int(float64(len(lat))*p))].Round(10 * time.Microsecond)
		}
		fmt.Printf("| %s | %d | %d | %d | %s | %s | %s | %s |\n", q.name, l.Count, l.TotalCount, len(lat),
			pct(0.50), pct(0.99), lat[len(lat)-1].Round(10*time.Microsecond), loadAvg())
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "runtimesload:", err)
	os.Exit(1)
}

// explainPage prints EXPLAIN ANALYZE of the statements keb runs for one page
// of 100, taken from the store itself so they cannot drift from the product,
// and run as the store runs them: in its transaction, with its settings (JIT
// off, custom plans). filter is
// "-" (no filter), a global account ID, or a query string parsed as
// /info/runtimes parses it.
func explainPage(ctx context.Context, dbURL, filter string) error {
	if dbURL == "" {
		return fmt.Errorf("-explain needs -database-url or APP_DATABASE_URL")
	}
	q := storage.RuntimeQuery{Page: 1, PageSize: 100}
	switch {
	case filter == "-":
	case strings.Contains(filter, "="):
		v, err := url.ParseQuery(filter)
		if err != nil {
			return fmt.Errorf("-explain %q: %w", filter, err)
		}
		if q, err = runtimelisting.ParseQuery(v); err != nil {
			return fmt.Errorf("-explain %q: %w", filter, err)
		}
	default:
		q.GlobalAccountIDs = []string{filter}
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	count, countArgs := storage.RuntimesCountSQL(q)
	return pgx.BeginTxFunc(ctx, conn, storage.RuntimesTxOptions, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, storage.RuntimesTxSettings); err != nil {
			return err
		}
		// As Runtimes: the count first, then the page built with its total
		// (a deep page's boundary from the end).
		total, err := storage.ScanRuntimesCount(tx.QueryRow(ctx, count, countArgs...))
		if err != nil {
			return fmt.Errorf("counting: %w", err)
		}
		page, pageArgs := storage.RuntimesPageSQL(q, total)
		for _, st := range []struct {
			name string
			sql  string
			args []any
		}{{"count", count, countArgs}, {"page", page, pageArgs}} {
			rows, _ := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+st.sql, st.args...)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("explaining the %s statement: %w", st.name, err)
			}
			fmt.Printf("== %s statement\n%s\n", st.name, strings.Join(lines, "\n"))
		}
		return nil
	})
}
