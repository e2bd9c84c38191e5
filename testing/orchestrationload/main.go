// Command orchestrationload measures one orchestration over every runtime
// of a running `keb dev`: it POSTs a Kyma upgrade of all runtimes with
// -workers, follows it, and prints the time until its targets were frozen
// and the first upgrades ran, the time until the last upgrade started and
// until the end, upgrades per second, the database statements and API
// server requests per upgrade (all of keb's, from
// keb_database_statements_total and keb_apiserver_requests_total) and the
// scheduler's passes, from its queue job. Provision the runtimes first,
// e.g. with `go run ./testing/load -mode pipeline -n 1000`.
//
//	go run ./testing/orchestrationload -url http://127.0.0.1:8080 -workers 20
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/devstack"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "broker base URL")
	dir := flag.String("dir", ".keb", "dev state directory of the running `keb dev` (token, database URL)")
	workers := flag.Int("workers", 20, "parallel.workers of the orchestration")
	version := flag.String("version", "2.99.0", "Kyma version to upgrade to")
	dryRun := flag.Bool("dry-run", false, "orchestrate a dry run")
	flag.Parse()
	if err := run(*base, *dir, *workers, *version, *dryRun); err != nil {
		fmt.Fprintln(os.Stderr, "orchestrationload:", err)
		os.Exit(1)
	}
}

func run(base, dir string, workers int, version string, dryRun bool) error {
	ctx := context.Background()
	key, err := auth.LoadOrCreateDevKey(dir)
	if err != nil {
		return err
	}
	tok, err := key.Mint(devstack.Issuer, devstack.Audience, "orchestrationload",
		[]string{auth.ScopeUpgradeRead, auth.ScopeUpgradeWrite}, time.Hour)
	if err != nil {
		return err
	}
	ep, err := devstack.LoadEndpoints(dir)
	if err != nil {
		return err
	}
	db, err := pgx.Connect(ctx, ep.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	var runtimes int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM instances WHERE state = 'succeeded'`).Scan(&runtimes); err != nil {
		return err
	}
	call := func(method, path, body string, out any) error {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %s %s", method, path, res.Status, raw)
		}
		return json.Unmarshal(raw, out)
	}
	before, err := metrics(base)
	if err != nil {
		return err
	}
	start := time.Now()
	var created map[string]string
	if err := call(http.MethodPost, "/upgrade/kyma", fmt.Sprintf(`{"targets": {"include": [{"target": "all"}]},
		"kyma": {"version": %q}, "strategy": {"parallel": {"workers": %d}}, "dryRun": %t}`, version, workers, dryRun), &created); err != nil {
		return err
	}
	id := created["orchestrationID"]
	var frozen, lastStarted, ended time.Duration
	maxRunning := 0
	var state, description string
	for {
		var pending, running, total int
		if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'in progress'),
			count(*) FROM orchestration_operations WHERE orchestration_id = $1`, id).Scan(&pending, &running, &total); err != nil {
			return err
		}
		var inFlight int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM operations WHERE orchestration_id = $1 AND state = 'in progress'`, id).Scan(&inFlight); err != nil {
			return err
		}
		maxRunning = max(maxRunning, inFlight)
		now := time.Since(start)
		if frozen == 0 && total > 0 && running > 0 {
			frozen = now
		}
		if lastStarted == 0 && total > 0 && pending == 0 {
			lastStarted = now
		}
		if err := db.QueryRow(ctx, `SELECT state, description FROM orchestrations WHERE orchestration_id = $1`, id).Scan(&state, &description); err != nil {
			return err
		}
		if state == "succeeded" || state == "failed" || state == "canceled" {
			ended = now
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	after, err := metrics(base)
	if err != nil {
		return err
	}
	passes := after["keb_orchestration_passes_total"] - before["keb_orchestration_passes_total"]
	fmt.Printf("orchestration %s over %d runtimes, %d workers, dry run %t: %s (%s)\n", id, runtimes, workers, dryRun, state, description)
	fmt.Printf("targets frozen and first upgrades running after %s; last upgrade started after %s; ended after %s\n",
		frozen.Round(time.Millisecond), lastStarted.Round(time.Millisecond), ended.Round(time.Millisecond))
	fmt.Printf("%.1f upgrades/s; at most %d upgrades in progress at once (sampled every 20 ms)\n",
		float64(runtimes)/ended.Seconds(), maxRunning)
	fmt.Printf("statements: %.1f per upgrade (all of keb, keb_database_statements_total); scheduler passes: %.0f (%.2f per upgrade)\n",
		(after["keb_database_statements_total"]-before["keb_database_statements_total"])/float64(runtimes), passes, passes/float64(runtimes))
	fmt.Printf("apiserver requests: %.1f per upgrade (all of keb, keb_apiserver_requests_total)\n",
		(after["keb_apiserver_requests_total"]-before["keb_apiserver_requests_total"])/float64(runtimes))
	return nil
}

// metrics reads the unlabelled counters of /metrics this command reports.
func metrics(base string) (map[string]float64, error) {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// keb's requests to the API servers, summed over their labels.
		if rest, ok := strings.CutPrefix(sc.Text(), "keb_apiserver_requests_total{"); ok {
			if _, v, ok := strings.Cut(rest, "} "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, err
				}
				out["keb_apiserver_requests_total"] += f
			}
			continue
		}
		for _, name := range []string{"keb_database_statements_total", "keb_orchestration_passes_total"} {
			if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, err
				}
				out[name] = f
			}
		}
	}
	if _, ok := out["keb_orchestration_passes_total"]; !ok {
		return nil, fmt.Errorf("no keb_orchestration_passes_total in %s/metrics (a keb with workers?)", base)
	}
	return out, nil
}
