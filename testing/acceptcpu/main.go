// Command acceptcpu measures keb's CPU per provisioning accept (PUT → 202)
// of several keb binaries in one run: a `keb serve --workers 0` of each
// against the machine's PostgreSQL (a database each), driven in turn by one
// Go client, cells interleaved across rounds, keb's user+system time read
// from /proc/<pid>/stat over each cell and divided by its 202s. pgbench's
// single-row insert runs at each concurrency too, for the PUT/s ÷ TPS ratio.
//
//	go run ./testing/acceptcpu -binaries before=/tmp/keb-a,after=bin/keb -rounds 3 -duration 5s
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/kyma-keb/keb/internal/auth"
)

const (
	serviceID   = "47c9dcbf-ff30-448e-ab36-d3bad66ba281"
	azurePlanID = "4deee563-e5ec-4731-b9b1-53b42d855f0c"
	issuer      = "acceptcpu"
	audience    = "keb"
)

type binary struct {
	name, path string
	port       int
	cmd        *exec.Cmd
}

func main() {
	bins := flag.String("binaries", "keb=bin/keb", "name=path, comma-separated")
	rounds := flag.Int("rounds", 3, "rounds")
	dur := flag.Duration("duration", 5*time.Second, "per cell")
	concs := flag.String("concurrencies", "1,64", "concurrencies")
	dir := flag.String("dir", "/tmp/acceptcpu", "state directory")
	pgURL := flag.String("pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL admin URL")
	port := flag.Int("port", 59080, "first port")
	pgbench := flag.Bool("pgbench", true, "run pgbench at each concurrency")
	pprofFor := flag.String("pprof", "", "name:conc:seconds, a CPU profile of that binary's cell in the last round into dir")
	flag.Parse()
	ctx := context.Background()
	must(os.MkdirAll(*dir, 0o755))
	key, err := auth.LoadOrCreateDevKey(*dir)
	must(err)
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	must(err)
	pubFile := filepath.Join(*dir, "pub.pem")
	must(os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644))
	token, err := key.Mint(issuer, audience, "acceptcpu", []string{auth.ScopeBrokerWrite}, 2*time.Hour)
	must(err)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)

	admin, err := pgx.Connect(ctx, *pgURL)
	must(err)
	var list []*binary
	for i, nv := range strings.Split(*bins, ",") {
		name, path, _ := strings.Cut(nv, "=")
		b := &binary{name: name, path: path, port: *port + i}
		db := "acceptcpu_" + name
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		_, err := admin.Exec(ctx, "CREATE DATABASE "+db)
		must(err)
		logf, err := os.Create(filepath.Join(*dir, name+".log"))
		must(err)
		args := []string{"serve", "--workers", "0", "--host", "127.0.0.1", "--port", strconv.Itoa(b.port),
			"--database-url", strings.Replace(*pgURL, "/postgres?", "/"+db+"?", 1),
			"--database-secret-key", base64.StdEncoding.EncodeToString(secret),
			"--auth-public-key-files", pubFile, "--auth-issuer", issuer, "--auth-audience", audience}
		if pf, _, _ := strings.Cut(*pprofFor, ":"); pf == name {
			args = append(args, "--pprof-addr", "127.0.0.1:"+strconv.Itoa(b.port+100))
		}
		b.cmd = exec.Command(path, args...)
		b.cmd.Stdout, b.cmd.Stderr = logf, logf
		b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		must(b.cmd.Start())
		defer func() { _ = b.cmd.Process.Kill(); _ = b.cmd.Wait() }()
		list = append(list, b)
	}
	for _, b := range list {
		waitReady(b)
	}
	var pgb string
	if *pgbench {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS acceptcpu_pgbench WITH (FORCE)")
		_, err := admin.Exec(ctx, "CREATE DATABASE acceptcpu_pgbench")
		must(err)
		pgb = strings.Replace(*pgURL, "/postgres?", "/acceptcpu_pgbench?", 1)
		c, err := pgx.Connect(ctx, pgb)
		must(err)
		_, err = c.Exec(ctx, `CREATE TABLE bench_insert (id bigserial PRIMARY KEY, v text)`)
		must(err)
		c.Close(ctx)
		must(os.WriteFile(filepath.Join(*dir, "insert.sql"), []byte("INSERT INTO bench_insert (v) VALUES (md5(random()::text));\n"), 0o644))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 1024}, Timeout: 60 * time.Second}
	var cs []int
	for _, s := range strings.Split(*concs, ",") {
		n, err := strconv.Atoi(s)
		must(err)
		cs = append(cs, n)
	}
	// warm-up
	for _, b := range list {
		put(client, b, token, 4, 2*time.Second)
	}
	results := map[string][]string{}
	for r := 0; r < *rounds; r++ {
		for _, c := range cs {
			order := list
			if r%2 == 1 {
				order = reverse(list)
			}
			for _, b := range order {
				var stop func()
				if pf := strings.Split(*pprofFor, ":"); r == *rounds-1 && len(pf) == 3 && pf[0] == b.name && pf[1] == strconv.Itoa(c) {
					stop = profile(b, pf[2], *dir, c)
				}
				cpu0 := procCPU(b.cmd.Process.Pid)
				la0 := loadavg()
				t0 := time.Now()
				ok, errs := put(client, b, token, c, *dur)
				el := time.Since(t0)
				cpu := procCPU(b.cmd.Process.Pid) - cpu0
				if stop != nil {
					stop()
				}
				line := fmt.Sprintf("round %d c=%d %-8s %7.1f PUT/s  %d errors  CPU %.3f ms/req  load %s",
					r+1, c, b.name, float64(ok)/el.Seconds(), errs, float64(cpu.Microseconds())/1000/float64(ok), la0)
				fmt.Println(line)
				k := fmt.Sprintf("c=%d %s", c, b.name)
				results[k] = append(results[k], fmt.Sprintf("%.3f (%.0f/s)", float64(cpu.Microseconds())/1000/float64(ok), float64(ok)/el.Seconds()))
			}
			if pgb != "" {
				tps := runPGBench(pgb, filepath.Join(*dir, "insert.sql"), c, *dur)
				fmt.Printf("round %d c=%d pgbench %.1f TPS\n", r+1, c, tps)
				k := fmt.Sprintf("c=%d pgbench", c)
				results[k] = append(results[k], fmt.Sprintf("%.0f TPS", tps))
			}
		}
	}
	var keys []string
	for k := range results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("summary (ms keb CPU per 202, PUT/s):")
	for _, k := range keys {
		fmt.Printf("  %-16s %s\n", k, strings.Join(results[k], "; "))
	}
}

func reverse(l []*binary) []*binary {
	out := make([]*binary, len(l))
	for i, b := range l {
		out[len(l)-1-i] = b
	}
	return out
}

func profile(b *binary, secs, dir string, c int) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%s", b.port+100, secs))
		if err != nil {
			fmt.Println("pprof:", err)
			return
		}
		defer res.Body.Close()
		f, _ := os.Create(filepath.Join(dir, fmt.Sprintf("%s-c%d.pprof", b.name, c)))
		_, _ = io.Copy(f, res.Body)
		_ = f.Close()
	}()
	return func() { <-done }
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+)`)

func runPGBench(url, script string, c int, dur time.Duration) float64 {
	out, err := exec.Command("pgbench", "-n", "-f", script, "-c", strconv.Itoa(c), "-j", "2", "-T",
		strconv.Itoa(int(dur.Seconds())), url).CombinedOutput()
	if err != nil {
		fmt.Println("pgbench:", err, string(out))
		return 0
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

func put(client *http.Client, b *binary, token string, conc int, dur time.Duration) (ok, errs int64) {
	deadline := time.Now().Add(dur)
	var okN, errN atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				id := uuid.NewString()
				body := fmt.Sprintf(`{"service_id":%q,"plan_id":%q,"context":{"globalaccount_id":"ga-%s","subaccount_id":"bench-sa","user_id":"bench@example.com"},"parameters":{"name":"bench"}}`,
					serviceID, azurePlanID, id[:8])
				req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("http://127.0.0.1:%d/oauth/v2/service_instances/%s?accepts_incomplete=true", b.port, id), strings.NewReader(body))
				req.Header.Set("X-Broker-API-Version", "2.17")
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					errN.Add(1)
					continue
				}
				rb, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusAccepted {
					okN.Add(1)
				} else {
					errN.Add(1)
					once.Do(func() { fmt.Printf("%s: %d %s\n", b.name, res.StatusCode, bytes.TrimSpace(rb)) })
				}
			}
		}()
	}
	wg.Wait()
	return okN.Load(), errN.Load()
}

func waitReady(b *binary) {
	for i := 0; i < 600; i++ {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", b.port))
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	must(fmt.Errorf("%s not ready", b.name))
}

func procCPU(pid int) time.Duration {
	bs, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(err)
	s := string(bs)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

func loadavg() string {
	bs, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(bs))[:1], "")
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
