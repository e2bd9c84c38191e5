package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// workload is a platform's traffic while a fault happens: workers PUT new
// instances (each re-sent, as a platform does, until it is answered 202)
// and poll each accepted operation once; once limit PUTs are accepted, they
// poll on. An instance whose poll answered succeeded is bound (when the
// workload binds): its binding PUT is re-sent until answered 201 or 200,
// then read back with GET, and every second binding is unbound again
// (DELETE re-sent until 200, or 410 once an earlier try may have removed
// it). Every answer must be 202, 201 or 200, or 503 with Retry-After while
// the database is away (and, for a re-sent bind, 422 ConcurrencyError
// while an earlier try of it is still recorded in progress); anything else
// (a 500, a connection keb refused or dropped) is a failure the test
// reports.
type workload struct {
	s      *stack
	prefix string
	limit  int
	// targets are the replicas a request may go to (a load balancer's
	// choice); nil means every running replica.
	targets func() []*replica
	// pace is each worker's pause between requests.
	pace time.Duration
	// binds: instances are bound once they succeeded.
	binds bool
	// hold: after this many PUTs of new instances, the next wait for
	// release (0: none), so that a scenario's fault finds PUTs left to
	// send however long the load took to be ready for it.
	hold        int
	released    chan struct{}
	releaseOnce sync.Once

	next     atomic.Int64
	sent     atomic.Int64
	stopping chan struct{}
	wg       sync.WaitGroup

	mu          sync.Mutex
	accepted    []accepted
	acceptedAt  []time.Time
	answeredAt  []time.Time // every 202 and 200
	unavailable int         // 503 answers with Retry-After
	busy        int         // 422 ConcurrencyError to a re-sent bind
	failures    []string

	// toBind are succeeded instances not bound yet; polled marks those
	// whose success was seen.
	toBind     []string
	succeeded  map[string]bool
	pollCursor int
	bindCycles map[string]int
	nextBindAt time.Time
	bindings   map[string]*boundBinding

	// inFlight is what the workers are waiting for right now (a request,
	// a database read, a running replica), and since when: what a scenario
	// that waited in vain reports.
	inFlightMu sync.Mutex
	inFlight   map[int]inFlight
	nextFlight int
}

// inFlight is one wait of a worker.
type inFlight struct {
	what  string
	since time.Time
}

// track records that a worker waits for what, until the returned func is
// called.
func (w *workload) track(what string) (done func()) {
	w.inFlightMu.Lock()
	defer w.inFlightMu.Unlock()
	if w.inFlight == nil {
		w.inFlight = map[int]inFlight{}
	}
	id := w.nextFlight
	w.nextFlight++
	w.inFlight[id] = inFlight{what, time.Now()}
	return func() {
		w.inFlightMu.Lock()
		delete(w.inFlight, id)
		w.inFlightMu.Unlock()
	}
}

// describe says what the load has done so far and what its workers wait
// for now, for a scenario that waited in vain.
func (w *workload) describe() string {
	var b strings.Builder
	w.mu.Lock()
	fmt.Fprintf(&b, "load %s: %d of its %d PUTs sent (held: %v), %d accepted, %d bindings, %d answered 202/201/200, %d 503 with Retry-After, %d unexpected answers",
		w.prefix, min(int(w.next.Load()), w.limit), w.limit, w.holding(), len(w.accepted), len(w.bindings), len(w.answeredAt), w.unavailable, len(w.failures))
	if len(w.answeredAt) > 0 {
		fmt.Fprintf(&b, ", the last 2xx at %s", w.answeredAt[len(w.answeredAt)-1].Format("15:04:05.000"))
	}
	for _, f := range w.failures[max(0, len(w.failures)-5):] {
		fmt.Fprintf(&b, "\n  unexpected: %s", f)
	}
	w.mu.Unlock()
	w.inFlightMu.Lock()
	defer w.inFlightMu.Unlock()
	for _, f := range w.inFlight {
		fmt.Fprintf(&b, "\n  waiting since %s (%s): %s", f.since.Format("15:04:05.000"), time.Since(f.since).Round(time.Millisecond), f.what)
	}
	return b.String()
}

// boundBinding is one binding the workload made: what the PUT answered,
// and whether it was unbound since.
type boundBinding struct {
	id, instanceID string
	kubeconfig     string
	at             time.Time // the 201 or 200
	unbound        bool
}

// loadShape sizes a workload.
type loadShape struct {
	limit   int // the most PUTs of new instances
	workers int
	pace    time.Duration // each worker's pause between requests
	// targets are the replicas a request may go to (a load balancer's
	// choice); nil means every running replica.
	targets func() []*replica
	// binds: every succeeded instance is bound (and every second binding
	// unbound again), first those in bind, succeeded before the load.
	binds bool
	bind  []string
	// hold: after this many PUTs of new instances, the next wait for the
	// workload's release (0: none).
	hold int
}

// startLoad starts workers sending PUTs of instances named prefix-NNN.
func (s *stack) startLoad(prefix string, shape loadShape) *workload {
	w := &workload{s: s, prefix: prefix, limit: shape.limit, targets: shape.targets, pace: shape.pace, binds: shape.binds,
		hold: shape.hold, released: make(chan struct{}), stopping: make(chan struct{}), succeeded: map[string]bool{}, bindings: map[string]*boundBinding{},
		toBind: shape.bind, bindCycles: map[string]int{}}
	if w.targets == nil {
		w.targets = s.running
	}
	for range shape.workers {
		w.wg.Go(w.work)
	}
	return w
}

func (w *workload) work() {
	for {
		select {
		case <-w.stopping:
			return
		default:
		}
		if id, ok := w.nextToBind(); ok {
			w.bind(id)
			time.Sleep(w.pace)
			continue
		}
		if op, ok := w.unfinished(); ok {
			// A platform polls each operation until it is final; the
			// workload, which binds what succeeded, must see it succeed.
			w.poll(op)
		}
		if w.holding() {
			// New PUTs wait for the fault; polls go on.
			w.pollAny()
			continue
		}
		i := int(w.next.Add(1)) - 1
		if i >= w.limit {
			// All PUTs sent: polls go on.
			w.pollAny()
			continue
		}
		id := fmt.Sprintf("%s-%03d", w.prefix, i)
		// Re-sent until accepted, even after stop: an instance a 503
		// answered may have been written, and the platform would re-send.
		for giveUp, resent := time.Now().Add(2*time.Minute), false; ; resent = true {
			op, ok := w.provision(id, resent)
			if ok {
				w.poll(op)
				break
			}
			if time.Now().After(giveUp) {
				w.mu.Lock()
				w.failures = append(w.failures, fmt.Sprintf("PUT %s: not accepted within 2 minutes", id))
				w.mu.Unlock()
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(w.pace)
	}
}

// holding reports whether new PUTs wait: the workload holds them back
// after its first hold PUTs until release.
func (w *workload) holding() bool {
	if w.hold == 0 || int(w.next.Load()) < w.hold {
		return false
	}
	select {
	case <-w.released:
		return false
	default:
		return true
	}
}

// release lets the PUTs held back go on.
func (w *workload) release() { w.releaseOnce.Do(func() { close(w.released) }) }

// pollAny polls one accepted operation in turn and pauses.
func (w *workload) pollAny() {
	w.mu.Lock()
	if len(w.accepted) == 0 {
		w.mu.Unlock()
		time.Sleep(w.pace)
		return
	}
	op := w.accepted[w.pollCursor%len(w.accepted)]
	w.pollCursor++
	w.mu.Unlock()
	w.poll(op)
	time.Sleep(w.pace)
}

func (w *workload) target() *replica {
	up := w.targets()
	if len(up) == 0 {
		defer w.track("a running replica")()
	}
	for len(up) == 0 {
		time.Sleep(50 * time.Millisecond)
		up = w.targets()
	}
	return up[int(w.sent.Add(1))%len(up)]
}

// provision PUTs id once; ok when it was accepted. A re-sent PUT (resent)
// may find the instance an earlier try wrote, whose answer was lost, already
// provisioned: OSB's 200, whose operation the database names.
func (w *workload) provision(id string, resent bool) (accepted, bool) {
	r := w.target()
	done := w.track("PUT " + id + " to " + r.name)
	a, err := w.s.provision(r, id, "ga-"+id)
	done()
	want := []int{http.StatusAccepted}
	if resent {
		want = append(want, http.StatusOK)
	}
	if !w.expected("PUT "+id, r, a, err, want...) {
		return accepted{}, false
	}
	opID, _ := a.body["operation"].(string)
	if a.status == http.StatusOK {
		defer w.track("the database's provisioning of " + id)()
		if err := w.readProvisioning(id, &opID); err != nil {
			w.fail("PUT %s answered 200, but its provisioning is not in the database: %v", id, err)
			return accepted{}, false
		}
	}
	op := accepted{id, opID, "provision"}
	w.mu.Lock()
	w.accepted = append(w.accepted, op)
	w.acceptedAt = append(w.acceptedAt, time.Now())
	w.mu.Unlock()
	return op, true
}

// readProvisioning reads id's provisioning operation from the database
// into opID. The test's own pool may still hold a connection to a server
// that died or was demoted, so a failed read is tried again for a while;
// each try is bounded, as a connection to a frozen server never answers.
func (w *workload) readProvisioning(id string, opID *string) error {
	for giveUp := time.Now().Add(time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := w.s.db.QueryRow(ctx, `SELECT operation_id FROM operations WHERE instance_id = $1 AND type = 'provision'`, id).Scan(opID)
		cancel()
		if err == nil || errors.Is(err, pgx.ErrNoRows) || time.Now().After(giveUp) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (w *workload) poll(op accepted) {
	r := w.target()
	defer w.track("poll of " + op.instanceID + " to " + r.name)()
	a, err := w.s.call(r, http.MethodGet, fmt.Sprintf("/oauth/v2/service_instances/%s/last_operation?operation=%s",
		op.instanceID, op.operationID), "")
	if w.expected("poll of "+op.instanceID, r, a, err, http.StatusOK) && a.body["state"] == "succeeded" && w.binds {
		w.mu.Lock()
		if !w.succeeded[op.instanceID] {
			w.succeeded[op.instanceID] = true
			w.toBind = append(w.toBind, op.instanceID)
		}
		w.mu.Unlock()
	}
}

// unfinished returns, when the workload binds, the next accepted operation
// in turn whose success it has not seen yet.
func (w *workload) unfinished() (accepted, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.binds {
		return accepted{}, false
	}
	for range w.accepted {
		op := w.accepted[w.pollCursor%len(w.accepted)]
		w.pollCursor++
		if !w.succeeded[op.instanceID] {
			return op, true
		}
	}
	return accepted{}, false
}

// expected records one answer and reports whether it was one of want.
func (w *workload) expected(what string, r *replica, a answer, err error, want ...int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		w.failures = append(w.failures, fmt.Sprintf("%s to %s: %v", what, r.name, err))
	case slices.Contains(want, a.status):
		w.answeredAt = append(w.answeredAt, time.Now())
		return true
	case a.status == http.StatusServiceUnavailable && a.header.Get("Retry-After") != "" && a.body["error"] == "ServiceUnavailable":
		w.unavailable++
	case a.status == http.StatusUnprocessableEntity && a.body["error"] == "ConcurrencyError" && strings.HasPrefix(what, "re-sent bind"):
		// OSB: retry later; an earlier try of this bind is recorded in
		// progress until its deadline.
		w.busy++
	default:
		w.failures = append(w.failures, fmt.Sprintf("%s to %s: %d %v", what, r.name, a.status, a.body))
	}
	return false
}

// acceptedCount is the number of 202s so far.
func (w *workload) acceptedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.accepted)
}

// acceptedAfter counts the 202s answered after t, and returns the first.
func (w *workload) acceptedAfter(t time.Time) (int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, first := 0, time.Time{}
	for _, at := range w.acceptedAt {
		if at.After(t) {
			if n == 0 {
				first = at
			}
			n++
		}
	}
	return n, first
}

// answeredAfter counts the 202s and 200s answered after t.
func (w *workload) answeredAfter(t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, at := range w.answeredAt {
		if at.After(t) {
			n++
		}
	}
	return n
}

// stop ends the load once every worker's instance is accepted, fails the
// test for every unexpected answer, and returns the accepted operations.
func (w *workload) stop() []accepted {
	w.s.t.Helper()
	close(w.stopping)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, f := range w.failures {
		if i == 10 {
			w.s.t.Errorf("... and %d more unexpected answers", len(w.failures)-10)
			break
		}
		w.s.t.Errorf("unexpected answer: %s", f)
	}
	bound, unbound := 0, 0
	for _, b := range w.bindings {
		if b.unbound {
			unbound++
		} else {
			bound++
		}
	}
	w.s.t.Logf("load %s: %d requests: %d accepted, %d bindings made (%d of them unbound again), %d answered 202/201/200 in all, "+
		"%d answered 503 with Retry-After, %d re-sent binds answered 422 ConcurrencyError, %d unexpected answers",
		w.prefix, len(w.answeredAt)+w.unavailable+w.busy+len(w.failures), len(w.accepted), bound+unbound, unbound, len(w.answeredAt),
		w.unavailable, w.busy, len(w.failures))
	return w.accepted
}
