package console

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// OverviewReader reads the overview's figures (storage.Store).
type OverviewReader interface {
	Overview(ctx context.Context, since time.Time, bucket time.Duration) (storage.Overview, error)
}

// PoolLister lists the account pool's accounts (hyperscaler.AccountPool).
type PoolLister interface {
	Accounts(ctx context.Context) ([]hyperscaler.AccountInfo, error)
}

// window is the overview's period: its length and its chart's bucket.
type window struct {
	Name, Label    string
	Length, Bucket time.Duration
}

var windows = []window{
	{"day", "last 24 hours", 24 * time.Hour, time.Hour},
	{"week", "last 7 days", 7 * 24 * time.Hour, 6 * time.Hour},
}

// overviewTTL is how long an overview is reused: a page refreshed by many
// people reads the database once per window.
const overviewTTL = 30 * time.Second

// overviewCache keeps the latest overview of each window.
type overviewCache struct {
	mu   sync.Mutex
	byW  map[string]storage.Overview
	read map[string]time.Time
}

func (c *Console) overview(ctx context.Context, w window) (storage.Overview, error) {
	c.cache.mu.Lock()
	defer c.cache.mu.Unlock()
	if t, ok := c.cache.read[w.Name]; ok && time.Since(t) < overviewTTL {
		return c.cache.byW[w.Name], nil
	}
	o, err := c.opts.Overview.Overview(ctx, time.Now().Add(-w.Length), w.Bucket)
	if err != nil {
		return o, err
	}
	if c.cache.byW == nil {
		c.cache.byW, c.cache.read = map[string]storage.Overview{}, map[string]time.Time{}
	}
	c.cache.byW[w.Name], c.cache.read[w.Name] = o, time.Now()
	return o, nil
}

// parseOverviewQuery reads the overview's only parameter, window.
func parseOverviewQuery(q map[string][]string) (window, error) {
	w := windows[0]
	for k, v := range q {
		if k != "window" {
			return w, fmt.Errorf("unknown query parameter %.64q (the overview takes window=day or window=week)", k)
		}
		if len(v) != 1 {
			return w, fmt.Errorf("window is given %d times", len(v))
		}
		i := slices.IndexFunc(windows, func(w window) bool { return w.Name == v[0] })
		if i < 0 {
			return w, fmt.Errorf("unknown window %.64q (want day or week)", v[0])
		}
		w = windows[i]
	}
	return w, nil
}

// bar is one row of a horizontal bar chart.
type bar struct {
	Label, Value, Title string
	// Percent is the bar's length relative to the longest.
	Percent float64
	Class   string
}

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request, token string) {
	// The runtimes list was /console until the overview took its place: a bookmark
	// with the list's filters (and no window) still opens that list.
	if q := r.URL.Query(); len(q) > 0 && !q.Has("window") {
		http.Redirect(w, r, "/console/runtimes?"+r.URL.RawQuery, http.StatusMovedPermanently)
		return
	}
	win, err := parseOverviewQuery(r.URL.Query())
	if err != nil {
		c.render(w, http.StatusBadRequest, "overview.html", map[string]any{"Error": err.Error(), "Windows": windows, "Window": windows[0]})
		return
	}
	data := map[string]any{"Windows": windows, "Window": win}
	o, err := c.overview(r.Context(), win)
	if err != nil {
		logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: reading the overview")
		data["Error"] = "the overview could not be read"
		c.render(w, http.StatusInternalServerError, "overview.html", data)
		return
	}
	byState, byPlan, byRegion, byKyma := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	total := 0
	for _, rc := range o.Runtimes {
		byState[rc.State] += rc.N
		byPlan[rc.Plan] += rc.N
		byRegion[rc.Region] += rc.N
		if rc.KymaState != "" {
			byKyma[rc.KymaState] += rc.N
		}
		total += rc.N
	}
	failedOps := 0
	for _, f := range o.Failures {
		failedOps += f.N
	}
	data["Total"], data["ByState"] = total, byState
	data["FailedOps"] = failedOps
	data["StateBars"] = countBars(byState, map[string]string{"failed": "bad", "provisioning": "warn", "deprovisioning": "warn", "succeeded": "ok"})
	data["PlanBars"] = countBars(byPlan, nil)
	data["RegionBars"] = countBars(byRegion, nil)
	data["KymaBars"] = countBars(byKyma, map[string]string{"Error": "bad", "Warning": "warn", "Processing": "warn", "Ready": "ok"})
	data["FailedRuntimes"] = failureBars(o.FailedRuntimes)
	data["Failures"] = failureBars(o.Failures)
	data["Categories"] = categoryBars(o.Failures)
	data["Chart"] = operationsChart(o.Operations, time.Now().Add(-win.Length), win.Bucket)
	data["Steps"] = stepBars(o.Steps)
	data["Provisioning"] = o.Provisioning
	data["Parameters"] = parameterBars(o.Parameters, o.Instances)
	if c.opts.Pool != nil {
		accounts, err := c.opts.Pool.Accounts(r.Context())
		if err != nil {
			logging.FromContext(r.Context(), c.opts.Log).WithError(err).Warn("console: listing the account pool")
			data["PoolError"] = "the account pool could not be read from the control plane"
		}
		data["Pool"] = hyperscaler.Summarise(accounts)
	}
	c.render(w, http.StatusOK, "overview.html", data)
}

// countBars are counts by name, largest first.
func countBars(counts map[string]int, classes map[string]string) []bar {
	maxN := 0
	for _, n := range counts {
		maxN = max(maxN, n)
	}
	out := make([]bar, 0, len(counts))
	for name, n := range counts {
		out = append(out, bar{Label: name, Value: fmt.Sprint(n), Percent: percent(n, maxN), Class: classes[name]})
	}
	slices.SortFunc(out, func(a, b bar) int {
		return cmp.Or(-cmp.Compare(counts[a.Label], counts[b.Label]), strings.Compare(a.Label, b.Label))
	})
	return out
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// failureBars are failures by step, largest first, each labelled with its
// component and titled with an example message.
func failureBars(list []storage.FailureCount) []bar {
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b storage.FailureCount) int {
		return cmp.Or(-cmp.Compare(a.N, b.N), strings.Compare(a.Step, b.Step))
	})
	maxN := 0
	for _, f := range list {
		maxN = max(maxN, f.N)
	}
	out := make([]bar, 0, len(list))
	for _, f := range list {
		step, cat := f.Step, f.Category
		if step == "" {
			step = "before any step"
		}
		if cat == "" {
			if c, ok := process.StepComponent(f.Step); ok {
				cat = string(c)
			}
		}
		out = append(out, bar{Label: step + " · " + cat, Value: fmt.Sprint(f.N), Percent: percent(f.N, maxN), Class: "bad", Title: f.Example})
	}
	return out
}

// categoryBars are the failures by component.
func categoryBars(list []storage.FailureCount) []bar {
	byCat := map[string]int{}
	for _, f := range list {
		cat := f.Category
		if cat == "" {
			c, _ := process.StepComponent(f.Step)
			cat = string(c)
		}
		byCat[cat] += f.N
	}
	out := countBars(byCat, nil)
	for i := range out {
		out[i].Class = "bad"
	}
	return out
}

// stepBars are the steps by their p95 duration, slowest first.
func stepBars(list []storage.StepDurations) []bar {
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b storage.StepDurations) int { return cmp.Compare(b.P95, a.P95) })
	maxS := 0.0
	for _, s := range list {
		maxS = max(maxS, s.P95)
	}
	out := make([]bar, 0, len(list))
	for _, s := range list {
		p := 0.0
		if maxS > 0 {
			p = 100 * s.P95 / maxS
		}
		out = append(out, bar{Label: s.Step + " (" + s.Type + ")", Value: seconds(s.P95), Percent: p,
			Title: fmt.Sprintf("%d runs: median %s, p95 %s, longest %s", s.Count, seconds(s.P50), seconds(s.P95), seconds(s.Max))})
	}
	return out
}

// parameterBars are how many live instances set each parameter.
func parameterBars(list []storage.ParameterCount, instances int) []bar {
	counts := map[string]int{}
	for _, p := range list {
		counts[p.Name] = p.N
	}
	out := countBars(counts, nil)
	for i := range out {
		out[i].Percent = percent(counts[out[i].Label], instances)
		out[i].Value = fmt.Sprintf("%s (%.0f%%)", out[i].Value, out[i].Percent)
	}
	return out
}

// seconds renders a duration in seconds as people read it.
func seconds(s float64) string {
	return since(time.Duration(s * float64(time.Second)))
}

// operationsChart draws the operations accepted per bucket as stacked
// bars (succeeded, failed, in progress) in an inline SVG.
func operationsChart(buckets []storage.OperationBucket, from time.Time, size time.Duration) template.HTML {
	n := int(time.Since(from)/size) + 1
	start := from.Truncate(size)
	type stack struct{ ok, failed, running int }
	stacks := make([]stack, n+1)
	for _, b := range buckets {
		i := int(b.Start.Sub(start) / size)
		if i < 0 || i > n {
			continue
		}
		switch b.State {
		case string(storage.OperationSucceeded):
			stacks[i].ok += b.N
		case string(storage.OperationFailed):
			stacks[i].failed += b.N
		default:
			stacks[i].running += b.N
		}
	}
	maxN := 1
	for _, s := range stacks {
		maxN = max(maxN, s.ok+s.failed+s.running)
	}
	const width, height, left, bottom = 720.0, 160.0, 34.0, 18.0
	bw := (width - left) / float64(len(stacks))
	scale := (height - bottom - 4) / float64(maxN)
	var sb strings.Builder
	fmt.Fprintf(&sb, `<svg id="ops-chart" viewBox="0 0 %.0f %.0f" width="100%%" role="img" aria-label="operations per %s">`, width, height, size)
	fmt.Fprintf(&sb, `<text x="0" y="10">%d</text><text x="0" y="%.0f">0</text>`, maxN, height-bottom)
	for i, s := range stacks {
		x := left + float64(i)*bw
		y := height - bottom
		for _, part := range []struct {
			n     int
			color string
			what  string
		}{{s.ok, "#3a9d5d", "succeeded"}, {s.failed, "#c9303e", "failed"}, {s.running, "#e0a800", "in progress"}} {
			if part.n == 0 {
				continue
			}
			h := float64(part.n) * scale
			y -= h
			at := start.Add(time.Duration(i) * size).UTC()
			fmt.Fprintf(&sb, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d %s</title></rect>`,
				x, y, max(bw-1, 1), h, part.color, at.Format("Jan 2 15:04 MST"), part.n, part.what)
		}
		if every := max(len(stacks)/6, 1); i%every == 0 {
			fmt.Fprintf(&sb, `<text x="%.1f" y="%.0f">%s</text>`, x, height-4, start.Add(time.Duration(i)*size).UTC().Format("Jan 2 15h"))
		}
	}
	sb.WriteString(`</svg>`)
	return template.HTML(sb.String()) // numbers and fixed words only
}
