package main

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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
	"github.com/kyma-keb/keb/internal/devstack"
)

// acceptConfig is -mode accept: keb's CPU per provisioning accept (PUT →
// 202) of several binaries in one run, without `keb dev` (for a machine too
// busy for `make bench`): a `keb serve --workers 0` of each against an
// existing PostgreSQL (a database each, dropped first), driven in turn by
// one client, cells interleaved and their order reversed every other
// round, keb's user+system time from /proc/<pid>/stat over each cell
// divided by its 202s; pgbench's single-row insert after each
// concurrency's cells.
type acceptConfig struct {
	binaries      []namedBinary
	concurrencies []int
	rounds        int
	duration      time.Duration
	dir, pgURL    string
	port          int
	// profile, as name:concurrency:seconds, takes a CPU profile of that
	// binary's cell in the last round into dir.
	profile string
}

type acceptKeb struct {
	namedBinary
	port int
	cmd  *exec.Cmd
}

func runAccept(ctx context.Context, cfg acceptConfig) error {
	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return err
	}
	key, err := auth.LoadOrCreateDevKey(cfg.dir)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	pubFile := filepath.Join(cfg.dir, "dev-key.pub.pem")
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		return err
	}
	token, err := key.Mint(devstack.Issuer, devstack.Audience, "load", []string{auth.ScopeBrokerWrite}, 4*time.Hour)
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	admin, err := pgx.Connect(ctx, cfg.pgURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	database := func(name string) (string, error) {
		db := "load_accept_" + name
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			return "", err
		}
		u, err := url.Parse(cfg.pgURL)
		if err != nil {
			return "", fmt.Errorf("-pg: %w", err)
		}
		u.Path = "/" + db
		return u.String(), nil
	}

	var kebs []*acceptKeb
	for i, b := range cfg.binaries {
		k := &acceptKeb{namedBinary: b, port: cfg.port + i}
		dbURL, err := database(b.name)
		if err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(cfg.dir, b.name+".log"))
		if err != nil {
			return err
		}
		defer logf.Close()
		args := []string{"serve", "--workers", "0", "--host", "127.0.0.1", "--port", strconv.Itoa(k.port),
			"--database-url", dbURL, "--database-secret-key", base64.StdEncoding.EncodeToString(secret),
			"--auth-public-key-files", pubFile, "--auth-issuer", devstack.Issuer, "--auth-audience", devstack.Audience}
		if name, _, _ := strings.Cut(cfg.profile, ":"); name == b.name {
			args = append(args, "--pprof-addr", "127.0.0.1:"+strconv.Itoa(k.port+100))
		}
		k.cmd = exec.CommandContext(ctx, b.path, args...)
		k.cmd.Stdout, k.cmd.Stderr = logf, logf
		k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := k.cmd.Start(); err != nil {
			return err
		}
		defer func() { _ = k.cmd.Process.Kill(); _ = k.cmd.Wait() }()
		kebs = append(kebs, k)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 60 * time.Second}
	for _, k := range kebs {
		if err := waitHealthy(ctx, client, k); err != nil {
			return err
		}
		acceptCell(client, k, token, 4, 2*time.Second) // warm-up
	}
	pgbURL, err := database("pgbench")
	if err != nil {
		return err
	}
	pgb, err := newPGBench(ctx, cfg.dir, pgbURL)
	if err != nil {
		return err
	}

	results := map[string][]string{}
	note := func(key, v string) { results[key] = append(results[key], v) }
	for r := range cfg.rounds {
		order := kebs
		if r%2 == 1 {
			order = make([]*acceptKeb, len(kebs))
			for i, k := range kebs {
				order[len(kebs)-1-i] = k
			}
		}
		for _, c := range cfg.concurrencies {
			for _, k := range order {
				var profiled func()
				if p := strings.Split(cfg.profile, ":"); r == cfg.rounds-1 && len(p) == 3 && p[0] == k.name && p[1] == strconv.Itoa(c) {
					profiled = profileCell(k, p[2], cfg.dir, c)
				}
				st0, err := readProcStat(k.cmd.Process.Pid)
				if err != nil {
					return err
				}
				load := loadavg()
				start := time.Now()
				ok, failed := acceptCell(client, k, token, c, cfg.duration)
				elapsed := time.Since(start)
				st1, err := readProcStat(k.cmd.Process.Pid)
				if err != nil {
					return err
				}
				if profiled != nil {
					profiled()
				}
				cpu := float64((st1.own - st0.own).Microseconds()) / 1000 / float64(max(ok, 1))
				fmt.Printf("round %d c=%d %-8s %7.1f PUT/s  %d failed  broker CPU %.3f ms/req  load %s\n",
					r+1, c, k.name, float64(ok)/elapsed.Seconds(), failed, cpu, load)
				note(fmt.Sprintf("c=%d %s", c, k.name), fmt.Sprintf("%.3f (%.0f/s)", cpu, float64(ok)/elapsed.Seconds()))
			}
			res, err := pgb.run(ctx, c, cfg.duration)
			if err != nil {
				return err
			}
			fmt.Printf("round %d c=%d pgbench  %.1f TPS\n", r+1, c, res.tps)
			note(fmt.Sprintf("c=%d pgbench", c), fmt.Sprintf("%.0f TPS", res.tps))
		}
	}
	keys := make([]string, 0, len(results))
	for k := range results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Println("summary: broker CPU ms per 202 (PUT/s), each round")
	for _, k := range keys {
		fmt.Printf("  %-16s %s\n", k, strings.Join(results[k], "; "))
	}
	return nil
}

func waitHealthy(ctx context.Context, client *http.Client, k *acceptKeb) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		res, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", k.port))
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer /healthz within 2 minutes (log in its -bench-dir)", k.name)
}

// acceptCell PUTs new azure instances from conc clients for dur.
func acceptCell(client *http.Client, k *acceptKeb, token string, conc int, dur time.Duration) (ok, failed int64) {
	deadline := time.Now().Add(dur)
	var okN, failedN atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				id := uuid.NewString()
				req, _ := http.NewRequest(http.MethodPut,
					fmt.Sprintf("http://127.0.0.1:%d/oauth/v2/service_instances/%s?accepts_incomplete=true", k.port, id),
					strings.NewReader(provisionBody(azurePlanID, "ga-"+id[:8], false)))
				req.Header.Set("X-Broker-API-Version", "2.17")
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					failedN.Add(1)
					continue
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusAccepted {
					okN.Add(1)
					continue
				}
				failedN.Add(1)
				once.Do(func() { fmt.Printf("%s: %d %s\n", k.name, res.StatusCode, strings.TrimSpace(string(body))) })
			}
		})
	}
	wg.Wait()
	return okN.Load(), failedN.Load()
}

// profileCell fetches a CPU profile of k for secs seconds into dir; the
// function returned waits for it.
func profileCell(k *acceptKeb, secs, dir string, conc int) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%s", k.port+100, secs))
		if err != nil {
			fmt.Println("profile:", err)
			return
		}
		defer res.Body.Close()
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-c%d.pprof", k.name, conc)))
		if err != nil {
			fmt.Println("profile:", err)
			return
		}
		_, _ = io.Copy(f, res.Body)
		_ = f.Close()
	}()
	return func() { <-done }
}
