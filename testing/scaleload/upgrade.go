package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/overrides"
)

// upgradeReport is a Kyma upgrade orchestration over every runtime of the
// filled control plane, driven by the two replicas, measured keb-side over
// a window once upgrades finish steadily.
type upgradeReport struct {
	N, Targets, Workers int
	Version, Channel    string
	// FrozenAfter is from the POST to the orchestration's targets being
	// written (its first pass); FirstAfter to the first upgrade finished.
	FrozenAfter, FirstAfter time.Duration
	// Window is how long upgrades were counted; Finished how many ended
	// in it (by their finished_at, keb's clock), Failed of those failed.
	Window           time.Duration
	Finished, Failed int
	// MedianTook is the median time of those upgrades from their
	// operation's creation (the scheduler starting it) to its end.
	MedianTook time.Duration
	// KebCPU is both replicas' CPU in the window, APIServerCPU the
	// kube-apiserver's; Idle* the same before the orchestration, scaled
	// to the window.
	KebCPU, APIServerCPU, IdleKebCPU, IdleAPIServerCPU time.Duration
	// Requests are the kube-apiserver's requests in the window by verb and
	// resource; Idle the same over an equal time before the orchestration
	// (the replicas' watches, leases, readiness checks).
	Requests, Idle map[string]float64
}

func (u upgradeReport) perSecond() float64 { return perSecond(u.Finished, u.Window) }

// measureUpgrades starts the orchestration on replica a and measures it
// for window after its first upgrade finished, then cancels it (the
// upgrades running finish; no new ones start).
func measureUpgrades(ctx context.Context, replicas []*replica, db *pgxpool.Pool, api *apiServer, token string, n int, window time.Duration) (upgradeReport, error) {
	rep := upgradeReport{N: n, Workers: 50, Version: "2.21.0", Channel: "fast", Window: window}
	fmt.Printf(">> orchestration: Kyma upgrade to %s (channel %s) of every runtime, %d workers, measured for %s\n",
		rep.Version, rep.Channel, rep.Workers, window)
	kebCPU := func() time.Duration {
		var sum time.Duration
		for _, r := range replicas {
			c, _ := cpuTime(r.cmd.Process.Pid)
			sum += c
		}
		return sum
	}
	// The idle rates (over the same time as the window would be too long:
	// a quarter of it, scaled).
	idle := window / 4
	before, err := api.requests(ctx)
	if err != nil {
		return rep, err
	}
	kebBefore, apiBefore := kebCPU(), must(cpuTime(api.pid))
	time.Sleep(idle)
	after, err := api.requests(ctx)
	if err != nil {
		return rep, err
	}
	f := float64(window) / float64(idle)
	rep.Idle = scaled(diff(after, before), f)
	rep.IdleKebCPU = time.Duration(float64(kebCPU()-kebBefore) * f)
	rep.IdleAPIServerCPU = time.Duration(float64(must(cpuTime(api.pid))-apiBefore) * f)

	body := fmt.Sprintf(`{"targets": {"include": [{"target": "all"}]}, "strategy": {"type": "parallel", "schedule": "immediate",
		"parallel": {"workers": %d}}, "kyma": {"version": %q, "channel": %q}}`, rep.Workers, rep.Version, rep.Channel)
	posted := time.Now()
	var created struct {
		OrchestrationID string `json:"orchestrationID"`
	}
	if err := call(ctx, http.MethodPost, replicas[0].url("/upgrade/kyma"), token, body, http.StatusAccepted, &created); err != nil {
		return rep, err
	}
	id := created.OrchestrationID
	finished := func() (int, error) {
		var c int
		err := db.QueryRow(ctx, `SELECT count(*) FROM operations WHERE orchestration_id = $1 AND finished_at IS NOT NULL`, id).Scan(&c)
		return c, err
	}
	deadline := time.Now().Add(5 * time.Minute)
	for rep.FirstAfter == 0 {
		if time.Now().After(deadline) {
			return rep, fmt.Errorf("orchestration %s: no upgrade finished within 5 minutes (targets: %d)", id, rep.Targets)
		}
		time.Sleep(100 * time.Millisecond)
		if rep.FrozenAfter == 0 {
			if err := db.QueryRow(ctx, `SELECT count(*) FROM orchestration_operations WHERE orchestration_id = $1`, id).Scan(&rep.Targets); err != nil {
				return rep, err
			}
			if rep.Targets > 0 {
				rep.FrozenAfter = time.Since(posted)
			}
		}
		if c, err := finished(); err != nil {
			return rep, err
		} else if c > 0 {
			rep.FirstAfter = time.Since(posted)
		}
	}
	fmt.Printf("   %d targets frozen after %.1fs, first upgrade finished after %.1fs\n", rep.Targets, rep.FrozenAfter.Seconds(), rep.FirstAfter.Seconds())

	reqBefore, err := api.requests(ctx)
	if err != nil {
		return rep, err
	}
	kebBefore, apiBefore = kebCPU(), must(cpuTime(api.pid))
	start := time.Now()
	time.Sleep(window)
	end := time.Now()
	rep.KebCPU, rep.APIServerCPU = kebCPU()-kebBefore, must(cpuTime(api.pid))-apiBefore
	reqAfter, err := api.requests(ctx)
	if err != nil {
		return rep, err
	}
	rep.Requests = diff(reqAfter, reqBefore)
	var took float64
	if err := db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'failed'),
			coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - created_at)), 0)
		FROM operations WHERE orchestration_id = $1 AND finished_at >= $2 AND finished_at < $3`, id, start, end).
		Scan(&rep.Finished, &rep.Failed, &took); err != nil {
		return rep, fmt.Errorf("counting upgrades: %w", err)
	}
	rep.MedianTook = time.Duration(took * float64(time.Second))
	fmt.Printf("   %d upgrades finished in %s (%.1f/s, %d failed), median %.1fs each; keb CPU %.1fs, kube-apiserver CPU %.1fs\n",
		rep.Finished, window, rep.perSecond(), rep.Failed, rep.MedianTook.Seconds(), rep.KebCPU.Seconds(), rep.APIServerCPU.Seconds())
	if rep.Failed > 0 {
		var why string
		_ = db.QueryRow(ctx, `SELECT description FROM operations WHERE orchestration_id = $1 AND state = 'failed' LIMIT 1`, id).Scan(&why)
		fmt.Printf("   a failed upgrade: %s\n", why)
	}
	if err := call(ctx, http.MethodPut, replicas[0].url("/orchestrations/"+id+"/cancel"), token, "", http.StatusOK, nil); err != nil {
		return rep, err
	}
	return rep, nil
}

// call sends one request to keb with the token and decodes the answer
// into out (when not nil); another status than want is an error.
func call(ctx context.Context, method, url, token, body string, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %s", method, url, res.Status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func scaled(m map[string]float64, f float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = v * f
	}
	return out
}

func sum(m map[string]float64) float64 {
	var s float64
	for _, v := range m {
		s += v
	}
	return s
}

func must(d time.Duration, _ error) time.Duration { return d }

// renderUpgrades is the orchestration's figures as markdown.
func renderUpgrades(u upgradeReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nKyma upgrade orchestration (`POST /upgrade/kyma`, target all, %d workers, to %s with channel %s) against the two replicas at N = %d: "+
		"%d targets frozen after %.1f s, the first upgrade finished after %.1f s; then counted for %s (keb's finished_at):\n\n",
		u.Workers, u.Version, u.Channel, u.N, u.Targets, u.FrozenAfter.Seconds(), u.FirstAfter.Seconds(), u.Window)
	b.WriteString("Per upgrade: what the window cost divided by the upgrades that finished in it (it includes what keb did besides, e.g. the " +
		"deprovisionings the load queued); \"before\" is the same cost just before the orchestration, over a quarter of the window, scaled to its length.\n\n")
	b.WriteString("| upgrades finished | failed | upgrades/s keb-side | median upgrade (created → finished) | keb CPU per upgrade (both replicas) | keb CPU before | kube-apiserver CPU per upgrade | its CPU before | apiserver requests per upgrade | requests before |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	per := func(x float64) string {
		if u.Finished == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", x/float64(u.Finished))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Fprintf(&b, "| %d | %d | %.1f | %.1f s | %s ms | %.1f s | %s ms | %.1f s | %s | %.0f |\n\n", u.Finished, u.Failed, u.perSecond(),
		u.MedianTook.Seconds(), per(ms(u.KebCPU)), u.IdleKebCPU.Seconds(), per(ms(u.APIServerCPU)), u.IdleAPIServerCPU.Seconds(),
		per(sum(u.Requests)), sum(u.Idle))
	b.WriteString("kube-apiserver requests in the window by verb and resource (`apiserver_request_total`), per upgrade, and before:\n\n")
	b.WriteString("| request | in the window | per upgrade | before |\n|---|---|---|---|\n")
	keys := make([]string, 0, len(u.Requests))
	for k := range u.Requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return u.Requests[keys[i]] > u.Requests[keys[j]] })
	for _, k := range keys {
		if u.Requests[k] < 1 {
			continue
		}
		p := "–"
		if u.Finished > 0 {
			p = fmt.Sprintf("%.2f", u.Requests[k]/float64(u.Finished))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.0f |\n", k, u.Requests[k], p, u.Idle[k])
	}
	return b.String()
}

// removeOverrides deletes the overrides Secrets the orchestration's
// upgrades wrote, so that a larger N after it lists what the fill wrote
// and nothing else, as the smaller N did.
func removeOverrides(ctx context.Context, f *filler) error {
	var names []string
	err := f.listMeta(ctx, corev1.SchemeGroupVersion.WithKind("SecretList"), func(m metav1.PartialObjectMetadata) {
		if strings.HasPrefix(m.Name, overrides.SecretName("")) {
			names = append(names, m.Name)
		}
	})
	if err != nil {
		return err
	}
	fmt.Printf("   removing the %d overrides Secrets the upgrades wrote\n", len(names))
	return inParallel(ctx, names, f.workers, func(name string) error {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: name}}
		return client.IgnoreNotFound(f.kcp.Delete(ctx, s))
	})
}
