package faults

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSoak provisions and deprovisions runtimes (with credentials, so every
// runtime gets a cached client) cycle after cycle through one replica, and
// checks that nothing grows with the number of runtimes: the live heap
// after GC (from GODEBUG=gctrace=1), goroutines, database connections, and
// leftover objects. `make test` runs 100 cycles, `make faults` 1,000.
func TestSoak(t *testing.T) {
	cycles, parallel := 100, 20
	if long() {
		cycles = 1000
	}
	s := newStack(t, stackOptions{replicas: 1, accounts: cycles + 10, delay: 500 * time.Millisecond,
		env: []string{"GODEBUG=gctrace=1", "GOGC=25"}})
	r := s.replicas[0]

	cycle := func(i int) error {
		id := fmt.Sprintf("soak-%04d", i)
		put, err := s.provision(r, id, "ga-"+id)
		if err != nil || put.status != http.StatusAccepted {
			return fmt.Errorf("PUT %s: %d %v %v", id, put.status, put.body, err)
		}
		if st := s.waitFinal([]accepted{{id, put.body["operation"].(string), "provision"}}, 5*time.Minute); st[put.body["operation"].(string)] != "succeeded" {
			return fmt.Errorf("provisioning of %s: %v", id, st)
		}
		del, err := s.deprovision(r, id)
		if err != nil || del.status != http.StatusAccepted {
			return fmt.Errorf("DELETE %s: %d %v %v", id, del.status, del.body, err)
		}
		if st := s.waitFinal([]accepted{{id, del.body["operation"].(string), "deprovision"}}, 5*time.Minute); st[del.body["operation"].(string)] != "succeeded" {
			return fmt.Errorf("deprovisioning of %s: %v", id, st)
		}
		return nil
	}
	// run runs cycles [from, to) with parallel workers.
	run := func(from, to int) {
		t.Helper()
		var wg sync.WaitGroup
		next := make(chan int)
		errs := make(chan error, to-from)
		for range parallel {
			wg.Go(func() {
				for i := range next {
					if err := cycle(i); err != nil {
						errs <- err
					}
				}
			})
		}
		for i := from; i < to; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}

	// Warm up (caches, pools, JIT of the database), then take the baseline
	// over the next tenth of the cycles.
	warm, base := cycles/10, cycles/5
	run(0, warm)
	_, offset := liveHeaps(t, r.log.Name(), 0)
	run(warm, base)
	baseHeaps, offset := liveHeaps(t, r.log.Name(), offset)
	baseGoroutines := s.metric(r, "go_goroutines")
	run(base, cycles-cycles/10)
	_, offset = liveHeaps(t, r.log.Name(), offset)
	run(cycles-cycles/10, cycles)
	endHeaps, _ := liveHeaps(t, r.log.Name(), offset)
	endGoroutines := s.metric(r, "go_goroutines")

	var conns int
	if err := s.db.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, appName).Scan(&conns); err != nil {
		t.Fatal(err)
	}
	// APP_WORKERS=10: the pool holds at most 2 × 10 + 10 connections, and
	// River's listener holds one more, taken out of the pool.
	if conns > 31 {
		t.Errorf("the replica holds %d database connections, more than its pool's 30 and the queue's listener", conns)
	}
	if len(baseHeaps) == 0 || len(endHeaps) == 0 {
		t.Fatalf("too few GCs to compare heaps (baseline %v, end %v)", baseHeaps, endHeaps)
	}
	growth := slices.Min(endHeaps) - slices.Min(baseHeaps)
	t.Logf("SOAK: %d cycles; live heap after GC %d MB -> %d MB (%+d MB); goroutines %.0f -> %.0f; %d database connections",
		cycles, slices.Min(baseHeaps), slices.Min(endHeaps), growth, baseGoroutines, endGoroutines, conns)
	if growth >= 5 {
		t.Errorf("live heap grew by %d MB over %d cycles, want < 5 MB", growth, cycles-base)
	}
	if endGoroutines > baseGoroutines+20 {
		t.Errorf("goroutines grew from %.0f to %.0f", baseGoroutines, endGoroutines)
	}
	s.checkInvariants(map[string]string{})
}

// gcLive matches the heap sizes of a gctrace line: start->end->live MB.
var gcLive = regexp.MustCompile(`^gc \d+ @.* (\d+)->(\d+)->(\d+) MB`)

// liveHeaps returns the live heap (MB) after each GC the replica's log
// reports from offset on, and the log's new size.
func liveHeaps(t *testing.T, path string, offset int64) ([]int, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var out []int
	r := bufio.NewReader(f)
	read := offset
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // a partial last line is read again next time
		}
		read += int64(len(line))
		if m := gcLive.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[3])
			out = append(out, n)
		}
	}
	return out, read
}

// metric reads one unlabelled value from a replica's /metrics.
func (s *stack) metric(r *replica, name string) float64 {
	s.t.Helper()
	res, err := s.httpClient.Get(r.url("/metrics"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatal(err)
			}
			return f
		}
	}
	s.t.Fatalf("/metrics lacks %s", name)
	return 0
}
