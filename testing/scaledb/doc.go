package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// sectionPrefix starts the heading of the section writeDoc owns.
const sectionPrefix = "## Fleet scale: listings and fleet jobs at "

// writeDoc renders the results (before first, after last) as the fleet-scale
// section of path, replacing the section a previous run wrote.
func writeDoc(path, commit, extra string, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("-doc needs the JSON results as arguments")
	}
	var runs []Results
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r Results
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		runs = append(runs, r)
	}
	after := runs[len(runs)-1]
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s%s instances (`make scale-db`, commit %s, %s)\n\n", sectionPrefix, thousands(after.Instances),
		commit, time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&sb, "Written by `make scale-db` (`testing/scaledb`): a fresh database loaded by `testing/runtimesload` with "+
		"%s instances and %s archived, each listing query sent sequentially to the `/info/runtimes` handler "+
		"(runtimelisting over storage.Store, as keb mounts it, on a loopback server in the tool: no auth, no "+
		"control plane), p50/p99 over up to 100 requests after 10 warm-ups; statements per request are the "+
		"fewest seen (a pgx tracer on the tool's pool); database CPU is the CPU time per request of the one "+
		"PostgreSQL backend serving the tool's one connection (/proc/<pid>/stat, 10 ms ticks summed over the "+
		"requests), which the machine's load moves far less than latency. Runs one after the other on the same database: %s. "+
		"Load average (1, 5, 15 min) before → after each run: %s.\n\n",
		thousands(after.Instances), thousands(after.Archived), runNames(runs), loads(runs))
	sb.WriteString("| query | totalCount |")
	for _, r := range runs {
		fmt.Fprintf(&sb, " %s p50 | %s p99 | %s database CPU | %s statements |", r.Label, r.Label, r.Label, r.Label)
	}
	sb.WriteString(" after: p99 ≤ 25 ms in this run |\n|---|---:|")
	for range runs {
		sb.WriteString("---:|---:|---:|---:|")
	}
	sb.WriteString("---|\n")
	for i, q := range after.Queries {
		fmt.Fprintf(&sb, "| `%s` | %s |", q.Name, thousands(q.Total))
		for _, r := range runs {
			if i < len(r.Queries) && r.Queries[i].Name == q.Name {
				rq := r.Queries[i]
				fmt.Fprintf(&sb, " %.2f ms | %.2f ms | %.2f ms | %d |", rq.P50, rq.P99, rq.DBCPU, rq.Statements)
			} else {
				sb.WriteString(" - | - | - | - |")
			}
		}
		ok := "yes"
		if q.P99 > 25 {
			ok = "**no**"
		}
		fmt.Fprintf(&sb, " %s |\n", ok)
	}
	sb.WriteString("\n| fleet measure |")
	for _, r := range runs {
		fmt.Fprintf(&sb, " %s |", r.Label)
	}
	sb.WriteString("\n|---|")
	for range runs {
		sb.WriteString("---|")
	}
	sb.WriteString("\n| metrics census (`Store.TakeCensus`, 5 refreshes): median / max, database CPU per refresh, statements |")
	for _, r := range runs {
		fmt.Fprintf(&sb, " %.1f ms / %.1f ms, %.1f ms, %d |", r.Census.Median, r.Census.Max, r.Census.DBCPU, r.Census.Statements)
	}
	sb.WriteString("\n| trial expiry job: candidates query median, statements |")
	for _, r := range runs {
		if r.Expiry == nil {
			sb.WriteString(" - |")
			continue
		}
		fmt.Fprintf(&sb, " %.1f ms, %d |", r.Expiry.Candidates.Median, r.Expiry.Candidates.Statements)
	}
	sb.WriteString("\n| trial expiry job: one run (suspensions started, time, statements per suspension) |")
	for _, r := range runs {
		if r.Expiry == nil {
			sb.WriteString(" - |")
			continue
		}
		per := 0.0
		if r.Expiry.Items > 0 {
			per = float64(r.Expiry.Statements) / float64(r.Expiry.Items)
		}
		fmt.Fprintf(&sb, " %d in %.2f s, %d statements (%.1f per suspension) |", r.Expiry.Items, r.Expiry.Seconds,
			r.Expiry.Statements, per)
	}
	for k, what := range []string{"dry run", "real"} {
		fmt.Fprintf(&sb, "\n| orchestration, Kyma upgrade, %s, 50 workers: targets; first pass (freezes them%s); later passes |", what,
			map[bool]string{true: "", false: ", starts 50"}[k == 0])
		for _, r := range runs {
			if len(r.Orchestrations) <= k {
				sb.WriteString(" - |")
				continue
			}
			o := r.Orchestrations[k]
			later := "none (nothing left to run)"
			if o.LaterPasses > 0 {
				later = fmt.Sprintf("%d, median %.1f ms, %d statements each (record 50 finished, start 50)", o.LaterPasses, o.LaterMedianMs, o.LaterStatements)
			}
			fmt.Fprintf(&sb, " %s; %.1f ms, %d statements; %s |", thousands(o.Targets), o.FirstMs, o.FirstStatements, later)
		}
	}
	sb.WriteString("\n| `keb runtimes --all -o json` (page size 100): rows, time, peak RSS |")
	for _, r := range runs {
		if r.CLI == nil {
			sb.WriteString(" - |")
			continue
		}
		fmt.Fprintf(&sb, " %s rows in %.1f s, %.1f MiB |", thousands(r.CLI.Rows), r.CLI.Seconds, r.CLI.MaxRSSMiB)
	}
	sb.WriteString("\n")
	if extra != "" {
		b, err := os.ReadFile(extra)
		if err != nil {
			return err
		}
		fmt.Fprintf(&sb, "\n%s\n", strings.TrimSpace(string(b)))
	}
	return replaceSection(path, sb.String())
}

// replaceSection puts section in place of the one starting with
// sectionPrefix (up to the next "## " heading), or at the end.
func replaceSection(path, section string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	start := strings.Index(doc, "\n"+sectionPrefix)
	if start < 0 {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	} else {
		rest := doc[start+1:]
		end := strings.Index(rest[len(sectionPrefix):], "\n## ")
		tail := ""
		if end >= 0 {
			tail = "\n" + rest[len(sectionPrefix)+end+1:]
		}
		doc = doc[:start+1] + section + tail
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

func runNames(runs []Results) string {
	var names []string
	for _, r := range runs {
		names = append(names, r.Label)
	}
	return strings.Join(names, ", then ")
}

func loads(runs []Results) string {
	var s []string
	for _, r := range runs {
		s = append(s, fmt.Sprintf("%s `%s` → `%s`", r.Label, r.LoadStart, r.LoadEnd))
	}
	return strings.Join(s, "; ")
}

// thousands writes n with commas: 100,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
