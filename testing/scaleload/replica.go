package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// replica is one `keb serve` process under measurement.
type replica struct {
	name      string
	port      int
	pprofPort int
	cmd       *exec.Cmd
	done      chan struct{}
	started   time.Time
}

// replicaResult is what one replica measured.
type replicaResult struct {
	Name string
	// Ready is from start to the first /readyz 200; Synced to the first
	// /readyz showing the control-plane watch running (its caches synced:
	// the watch's full list, what a resync costs again).
	Ready, Synced time.Duration
	// CPUAtSync is the replica's CPU time (user+system) when Synced.
	CPUAtSync time.Duration
	// Start and Soak are the memory after start and after the soak.
	Start, Soak memory
	// Profile is the heap profile taken after start (after a GC).
	Profile string
}

// memory is a replica's memory at one moment: RSS from /proc, the Go heap
// from its /metrics right after a GC (forced by the heap profile request),
// so HeapAlloc is the live heap.
type memory struct {
	RSS, HeapAlloc, HeapInuse, Sys uint64
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func startReplica(bin, name, dir string, env []string) (*replica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	r := &replica{name: name, port: port, pprofPort: pport, done: make(chan struct{})}
	r.cmd = exec.Command(bin, "serve")
	r.cmd.Env = append(os.Environ(), append(env, fmt.Sprintf("APP_PORT=%d", port),
		fmt.Sprintf("APP_PPROF_ADDR=127.0.0.1:%d", pport))...)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.started = time.Now()
	if err := r.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = r.cmd.Wait(); logf.Close(); close(r.done) }()
	return r, nil
}

func (r *replica) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", r.port, path) }

// awaitStart polls /readyz until the replica is ready and its watch runs.
func (r *replica) awaitStart(ctx context.Context, limit time.Duration) (ready, synced time.Duration, cpu time.Duration, err error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			return ready, synced, 0, fmt.Errorf("%s exited while starting (see its log)", r.name)
		case <-ctx.Done():
			return ready, synced, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		res, err := http.Get(r.url("/readyz"))
		if err != nil {
			continue
		}
		var body struct {
			Checks []struct {
				Name string `json:"name"`
				OK   bool   `json:"ok"`
			} `json:"checks"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK && ready == 0 {
			ready = time.Since(r.started)
		}
		for _, c := range body.Checks {
			if c.Name == "control plane watch" && c.OK && synced == 0 {
				synced = time.Since(r.started)
				cpu, _ = cpuTime(r.cmd.Process.Pid)
			}
		}
		if ready > 0 && synced > 0 {
			return ready, synced, cpu, nil
		}
	}
	return ready, synced, 0, fmt.Errorf("%s not ready with its watch running after %s", r.name, limit)
}

// measure forces a GC by taking a heap profile (saved to profile), then
// reads RSS and the Go heap.
func (r *replica) measure(profile string) (memory, error) {
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", r.pprofPort))
	if err != nil {
		return memory{}, fmt.Errorf("heap profile of %s: %w", r.name, err)
	}
	f, err := os.Create(profile)
	if err != nil {
		res.Body.Close()
		return memory{}, err
	}
	_, err = io.Copy(f, res.Body)
	res.Body.Close()
	f.Close()
	if err != nil {
		return memory{}, err
	}
	var m memory
	res, err = http.Get(r.url("/metrics"))
	if err != nil {
		return memory{}, fmt.Errorf("metrics of %s: %w", r.name, err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_alloc_bytes":
			m.HeapAlloc = uint64(v)
		case "go_memstats_heap_inuse_bytes":
			m.HeapInuse = uint64(v)
		case "go_memstats_sys_bytes":
			m.Sys = uint64(v)
		}
	}
	m.RSS, err = rss(r.cmd.Process.Pid)
	return m, err
}

func (r *replica) stop() {
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// poll sends steady polling to the replicas until ctx is done: per replica
// rate requests a second of last_operation and GET instance for random
// loaded instances, as platforms poll. It returns the requests sent and
// how many failed.
func poll(ctx context.Context, replicas []*replica, token string, n, rate int) (sent, failed int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for _, r := range replicas {
		wg.Go(func() {
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				id := fmt.Sprintf("rtload-inst-%07d", rand.IntN(n))
				path := "/oauth/v2/service_instances/" + id
				if i%2 == 0 {
					path += "/last_operation"
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url(path), nil)
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("X-Broker-API-Version", "2.14")
				res, err := client.Do(req)
				ok := err == nil && res.StatusCode < 500
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				if ctx.Err() != nil {
					return
				}
				mu.Lock()
				sent++
				if !ok {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sent, failed
}

// rss is a process's resident set (VmRSS in /proc/<pid>/status).
func rss(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for %d", pid)
}

// cpuTime is a process's user and system CPU time (/proc/<pid>/stat;
// clock ticks of 10 ms, Linux's USER_HZ).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command may hold spaces: fields count from after its ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseUint(fields[11], 10, 64)
	stime, _ := strconv.ParseUint(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
