// Command scaleload measures keb against a fleet-sized control plane
// (issue 30, `make scale`): it starts PostgreSQL and a kube-apiserver with
// etcd, loads N instances into the database (testing/runtimesload -load) and
// fills the control plane with their objects as the infrastructure manager
// and Lifecycle Manager leave them (a Runtime CR in KIM's shape with a Ready
// status, a Kyma CR with Lifecycle Manager's status, a kubeconfig Secret),
// batched over concurrent writers. Then, for each binary, it starts two
// `keb serve` replicas against them and measures the time to /readyz 200 and
// to the control-plane watch running (its first, full list: what a resync
// costs again), the CPU that took in keb and in the kube-apiserver, RSS and
// the live Go heap after start and after a soak of steady polling, and keeps
// each replica's heap profile. Several N (ascending) reuse the control
// plane, adding only the missing runtimes, so that memory per extra 1,000
// runtimes compares N's in one run.
//
//	go run ./testing/scaleload -n 10000,100000 -binaries after=bin/keb -soak 1m -doc docs/performance.md
package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/pgserver"
	"github.com/kyma-keb/keb/internal/procguard"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// secretKey seals credentials at rest in the replicas' database (nothing
// here has any).
const secretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// defaultAPIServerEnv bounds the kube-apiserver's Go heap: at 100,000
// runtimes it holds about 6.5 GiB of live objects (its watch cache: the
// Runtime and Kyma CRs as unstructured maps with their managed fields), and
// with Go's default GC its RSS grows to twice that and more (2.9x the live
// heap after the 10,000 fill), which this machine does not have beside
// etcd, keb and the other sessions. A soft limit makes it collect garbage
// sooner instead: its CPU, not keb's, pays (docs/performance.md).
const defaultAPIServerEnv = "GOMEMLIMIT=9GiB"

// etcdQuota is etcd's backend quota: 100,000 runtimes' objects with their
// revisions take a few GiB, past etcd's default 2 GiB.
const etcdQuota = 8 << 30

type binary struct{ name, path string }

// runtimesload is the loader's binary; empty: go run.
var runtimesload string

// viaAPI is filler.viaAPI.
var viaAPI int

// apiserverArgs and apiserverEnv are the control plane's kube-apiserver
// flags and environment (-apiserver-args, -apiserver-env).
var apiserverArgs, apiserverEnv string

// upgradeN and upgradeWindow are the orchestration's N and counting time.
var (
	upgradeN      int
	upgradeWindow time.Duration
)

// run is one binary's two replicas at one N.
type run struct {
	N       int
	Binary  string
	Replica []replicaResult
	// APIServerCPU is the kube-apiserver's CPU time while both replicas
	// started (their lists).
	APIServerCPU time.Duration
	// APIServerRSS is the kube-apiserver's RSS once both were running.
	APIServerRSS uint64
	// StartRequests are the kube-apiserver's requests while both replicas
	// started, by verb and resource (a watch counts once it ends).
	StartRequests map[string]float64
	Polled        int
	PollFailed    int
	// Upgrades is the orchestration measured on this run, if any.
	Upgrades *upgradeReport
}

func main() {
	ns := flag.String("n", "10000,100000", "runtimes, ascending, comma-separated")
	bins := flag.String("binaries", "after=bin/keb", "name=path of keb binaries to measure, comma-separated (e.g. before=.keb/scale-base/keb,after=bin/keb)")
	soak := flag.Duration("soak", time.Minute, "steady polling before memory is read again")
	rate := flag.Int("rate", 20, "polling requests per second per replica during the soak")
	workers := flag.Int("workers", 16, "concurrent writers filling the control plane through the API")
	flag.IntVar(&viaAPI, "via-api", 1000, "runtimes per fill created through the API; the rest are written into etcd")
	doc := flag.String("doc", "", "write the results into this markdown file's scale section (e.g. docs/performance.md)")
	commit := flag.String("commit", "", "commit the binaries were built from, for the doc")
	dir := flag.String("dir", "", "working directory (default: a temporary one, removed after)")
	flag.StringVar(&runtimesload, "runtimesload", "", "a built testing/runtimesload (default: go run ./testing/runtimesload)")
	flag.IntVar(&upgradeN, "upgrade-n", 10000, "at this N (one of -n), a Kyma upgrade orchestration of every runtime is measured against the last binary's replicas; 0: none")
	flag.StringVar(&apiserverArgs, "apiserver-args", "", "kube-apiserver flags for the control plane, comma-separated name=value")
	flag.StringVar(&apiserverEnv, "apiserver-env", defaultAPIServerEnv, "the kube-apiserver's environment settings, comma-separated NAME=value (docs/performance.md says why)")
	flag.DurationVar(&upgradeWindow, "upgrade-window", 2*time.Minute, "how long the orchestration's finished upgrades are counted")
	flag.Parse()
	if err := mainErr(*ns, *bins, *soak, *rate, *workers, *doc, *commit, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "scaleload:", err)
		os.Exit(1)
	}
}

func mainErr(nList, binList string, soak time.Duration, rate, workers int, doc, commit, dir string) error {
	var sizes []int
	for _, s := range strings.Split(nList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
			return fmt.Errorf("-n wants ascending positive numbers, got %q", nList)
		}
		sizes = append(sizes, n)
	}
	var binaries []binary
	for _, b := range strings.Split(binList, ",") {
		name, path, ok := strings.Cut(b, "=")
		if !ok {
			return fmt.Errorf("-binaries wants name=path, got %q", b)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		binaries = append(binaries, binary{name, abs})
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "keb-scale-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	ctrllog.SetLogger(logging.Logr(logrus.StandardLogger()))
	// PostgreSQL, etcd, the kube-apiserver and the replicas die with us.
	if err := procguard.Start(os.TempDir()); err != nil {
		return err
	}
	ctx := context.Background()
	silent := logrus.New()
	silent.SetOutput(io.Discard)

	fmt.Println(">> starting PostgreSQL and a control plane (etcd quota", etcdQuota>>30, "GiB)")
	pg, err := pgserver.Start(ctx, pgserver.Options{DataDir: filepath.Join(dir, "pgdata"), Throwaway: true, Log: silent,
		Settings: []string{"max_connections = 200"}})
	if err != nil {
		return fmt.Errorf("starting PostgreSQL: %w", err)
	}
	defer func() { _ = pg.Stop(context.Background()) }()
	args := map[string]string{}
	for _, kv := range strings.Split(apiserverArgs, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			args[strings.TrimPrefix(k, "--")] = v
		}
	}
	var envs []string
	for _, kv := range strings.Split(apiserverEnv, ",") {
		if kv = strings.TrimSpace(kv); kv != "" {
			envs = append(envs, kv)
		}
	}
	kcp, err := k8stest.StartWith(nil, k8stest.Options{EtcdQuota: etcdQuota, APIServerArgs: args, APIServerEnv: envs})
	if err != nil {
		return err
	}
	defer func() { _ = kcp.Stop() }()
	apiPID, err := kcp.APIServerPID()
	if err != nil {
		return err
	}
	scheme, err := app.Scheme()
	if err != nil {
		return err
	}
	cfg := *kcp.Config
	cfg.QPS, cfg.Burst = 1e6, 1e6 // the writers' concurrency is the limit
	kc, err := client.New(&cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	api, err := newAPIServer(&cfg, apiPID)
	if err != nil {
		return err
	}
	if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlplane.Namespace}}); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, "kcp.kubeconfig")
	if err := kcp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	cat, err := catalog.Load("")
	if err != nil {
		return err
	}
	key, err := auth.LoadOrCreateDevKey(dir)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	pubFile := filepath.Join(dir, "issuer.pem")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	token, err := key.Mint("scale", "keb", "scale", []string{auth.ScopeBrokerWrite, auth.ScopeCLDRead,
		auth.ScopeUpgradeRead, auth.ScopeUpgradeWrite}, 24*time.Hour)
	if err != nil {
		return err
	}

	f := &filler{kcp: kc, cat: cat, workers: workers, viaAPI: viaAPI,
		etcd: &etcdWriter{url: kcp.EtcdURL(), client: &http.Client{Timeout: time.Minute}}}
	var fills []fillReport
	var runs []run
	for _, n := range sizes {
		dbURL, err := loadDatabase(ctx, pg.URL, n)
		if err != nil {
			return err
		}
		db, err := pgxpool.New(ctx, dbURL)
		if err != nil {
			return err
		}
		fmt.Printf(">> filling the control plane up to %d runtimes (%d writers)\n", n, workers)
		rep, err := f.fill(ctx, db, n)
		if err != nil {
			db.Close()
			return err
		}
		fmt.Printf("   %d runtimes: %d objects through the API in %s (%.0f/s, %d requests), %d into etcd in %s (%.0f/s)\n",
			rep.Runtimes, rep.APIObjects, rep.APITook.Round(time.Second), perSecond(rep.APIObjects, rep.APITook), rep.APIRequests,
			rep.BulkObjects, rep.BulkTook.Round(time.Second), perSecond(rep.BulkObjects, rep.BulkTook))
		// What the kube-apiserver holds for the fleet, before any keb
		// watches it (its profile names what holds it).
		profile := filepath.Join(".keb", "scale", fmt.Sprintf("apiserver-%d.heap.pprof", n))
		if err := os.MkdirAll(filepath.Dir(profile), 0o755); err != nil {
			db.Close()
			return err
		}
		if rep.APIServerRSS, err = api.heapProfile(ctx, profile); err != nil {
			db.Close()
			return err
		}
		fmt.Printf("   kube-apiserver RSS %s (heap profile %s)\n", mib(rep.APIServerRSS), profile)
		fills = append(fills, rep)
		env := []string{
			"APP_HOST=127.0.0.1",
			"APP_DATABASE_URL=" + dbURL,
			"APP_DATABASE_SECRET_KEY=" + secretKey,
			"APP_AUTH_PUBLIC_KEY_FILES=" + pubFile,
			"APP_AUTH_ISSUER=scale", "APP_AUTH_AUDIENCE=keb",
			"APP_KCP_KUBECONFIG=" + kubeconfig,
			"APP_LOG_FORMAT=json", "APP_LOG_LEVEL=info",
			"APP_SHUTDOWN_DELAY=0s",
			"APP_READINESS_INTERVAL=250ms",
		}
		for i, b := range binaries {
			// An orchestration changes the Kyma CRs it reaches: a second
			// one over the same fleet would do other work, so only the
			// last binary's is measured.
			upgrades := n == upgradeN && i == len(binaries)-1
			r, err := measureRun(ctx, b, n, dir, env, api, token, soak, rate, db, upgrades)
			if err != nil {
				db.Close()
				fmt.Println(render(sizes, fills, runs, commit, soak, rate)) // what was measured before
				return err
			}
			runs = append(runs, r)
			if upgrades {
				if err := removeOverrides(ctx, f); err != nil {
					db.Close()
					return err
				}
			}
		}
		db.Close()
	}
	out := render(sizes, fills, runs, commit, soak, rate)
	fmt.Println(out)
	if doc != "" {
		return writeSection(doc, out)
	}
	return nil
}

// loadDatabase creates database scale_<n>, migrates it and loads n
// instances with runtimesload; it returns its URL.
func loadDatabase(ctx context.Context, adminURL string, n int) (string, error) {
	admin, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	name := fmt.Sprintf("scale_%d", n)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	dbURL := strings.Replace(adminURL, "/postgres?", "/"+name+"?", 1)
	pool, err := storage.Open(ctx, dbURL, 0)
	if err != nil {
		return "", err
	}
	_, err = storage.MigrateUp(ctx, pool)
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("migrating %s: %w", name, err)
	}
	fmt.Printf(">> loading %d instances into %s (testing/runtimesload)\n", n, name)
	args := []string{"-load", strconv.Itoa(n), "-archived", "0", "-database-url", dbURL}
	cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./testing/runtimesload"}, args...)...)
	if runtimesload != "" {
		cmd = exec.CommandContext(ctx, runtimesload, args...)
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("runtimesload: %w", err)
	}
	return dbURL, nil
}

// measureRun starts two replicas of b at once, waits for both to be ready
// with their watches running, reads their memory, soaks and reads again.
func measureRun(ctx context.Context, b binary, n int, dir string, env []string, api *apiServer, token string, soak time.Duration, rate int,
	db *pgxpool.Pool, upgrades bool) (run, error) {
	apiPID := api.pid
	res := run{N: n, Binary: b.name}
	fmt.Printf(">> %s: two replicas of keb serve at N=%d\n", b.name, n)
	apiBefore, _ := cpuTime(apiPID)
	reqBefore, _ := api.requests(ctx)
	var replicas []*replica
	defer func() {
		for _, r := range replicas {
			r.stop()
		}
	}()
	for _, name := range []string{"a", "b"} {
		r, err := startReplica(b.path, fmt.Sprintf("%s-%d-%s", b.name, n, name), dir, env)
		if err != nil {
			return res, err
		}
		replicas = append(replicas, r)
	}
	// Both replicas are watched at once: awaited one after the other, the
	// second's first /readyz 200 would be read only once the first's watch
	// ran (at 100,000 runtimes that read as 301 s instead of the second's
	// own time).
	res.Replica = make([]replicaResult, len(replicas))
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Go(func() {
			ready, synced, cpu, err := r.awaitStart(ctx, 25*time.Minute)
			res.Replica[i] = replicaResult{Name: r.name, Ready: ready, Synced: synced, CPUAtSync: cpu}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	apiAfter, _ := cpuTime(apiPID)
	res.APIServerCPU = apiAfter - apiBefore
	if reqAfter, err := api.requests(ctx); err == nil && reqBefore != nil {
		res.StartRequests = diff(reqAfter, reqBefore)
		fmt.Printf("   kube-apiserver requests until both watches ran: %s\n", formatRequests(res.StartRequests))
	}
	res.APIServerRSS, _ = rss(apiPID)
	// A moment for what start-up left behind (the Kyma states' first
	// writes) before memory is read.
	time.Sleep(5 * time.Second)
	for i, r := range replicas {
		rr := &res.Replica[i]
		rr.Profile = filepath.Join(dir, r.name+".heap.pprof")
		m, err := r.measure(rr.Profile)
		if err != nil {
			return res, err
		}
		rr.Start = m
		keep := filepath.Join(".keb", "scale", filepath.Base(rr.Profile))
		if err := os.MkdirAll(filepath.Dir(keep), 0o755); err == nil {
			if data, err := os.ReadFile(rr.Profile); err == nil {
				_ = os.WriteFile(keep, data, 0o644)
				rr.Profile = keep
			}
		}
		fmt.Printf("   %s: ready %.1fs, watch running %.1fs (CPU %.1fs), RSS %s, live heap %s\n", r.name,
			rr.Ready.Seconds(), rr.Synced.Seconds(), rr.CPUAtSync.Seconds(), mib(m.RSS), mib(m.HeapAlloc))
	}
	if soak > 0 {
		fmt.Printf("   soak: %s of steady polling (%d req/s per replica)\n", soak, rate)
		sctx, cancel := context.WithTimeout(ctx, soak)
		res.Polled, res.PollFailed = poll(sctx, replicas, token, n, rate)
		cancel()
		for i, r := range replicas {
			m, err := r.measure(filepath.Join(dir, r.name+".soak.pprof"))
			if err != nil {
				return res, err
			}
			res.Replica[i].Soak = m
			fmt.Printf("   %s after the soak: RSS %s, live heap %s\n", r.name, mib(m.RSS), mib(m.HeapAlloc))
		}
	}
	if upgrades {
		u, err := measureUpgrades(ctx, replicas, db, api, token, n, upgradeWindow)
		if err != nil {
			return res, err
		}
		res.Upgrades = &u
	}
	return res, nil
}

// formatRequests is requests by verb and resource, most first.
func formatRequests(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	return fmt.Sprintf("%.0f (%s)", sum(m), strings.Join(parts, ", "))
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
