package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/cleanup"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// newCIS serves a CIS stand-in over HTTP.
func newCIS(t *testing.T) (*cisstub.Server, string) {
	t.Helper()
	stub := cisstub.New("id", "secret")
	srv := httptest.NewServer(stub.Handler(nil))
	t.Cleanup(srv.Close)
	return stub, srv.URL
}

// cisClient is a fresh client of the stand-in at base: a restarted replica
// builds a new one.
func cisClient(t *testing.T, base string, v cis.Version, pageSize int) *cis.Client {
	t.Helper()
	path := cisstub.EventsV2Path
	switch v {
	case cis.V1:
		path = cisstub.EventsV1Path
	case cis.Central:
		path = cisstub.CentralEventsPath
	}
	c, err := cis.New(cis.Config{Version: v, EventsURL: base + path, AuthURL: base + cisstub.TokenPath,
		ClientID: "id", ClientSecret: "secret", PageSize: pageSize, Timeout: 5 * time.Second,
		RetryInitial: 10 * time.Millisecond, RetryFor: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// countingStore is the fixture's store whose instance lookups go through a
// pool counting their statements.
type countingStore struct {
	*storage.Store
	counted *storage.Store
	counter *pgtest.StatementCounter
	lookups []int64
}

func (s *countingStore) InstancesOfSubaccounts(ctx context.Context, ids []string) ([]storage.CleanupInstance, error) {
	before := s.counter.Count()
	out, err := s.counted.InstancesOfSubaccounts(ctx, ids)
	s.lookups = append(s.lookups, s.counter.Count()-before)
	return out, err
}

// TestSubaccountCleanup runs a pass on PostgreSQL against the stand-in,
// in every API version: 26 events in pages of 10 are three pages (central
// events v2: the first by filter, two by cursor).
func TestSubaccountCleanup(t *testing.T) {
	t.Parallel()
	for _, v := range []cis.Version{cis.Central, cis.V1, cis.V2} {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			stub, base := newCIS(t)
			// 25 deleted subaccounts over 3 pages of 10; two instances of
			// sa-00, one of each other even one, none of the odd ones.
			var wantTriggered []string
			for i := range 25 {
				sa := fmt.Sprintf("sa-%02d", i)
				if i%2 == 0 && i != 24 {
					id := "inst-" + sa
					f.running(id, sa, "rt-"+sa, time.Hour)
					wantTriggered = append(wantTriggered, id)
				}
				stub.Add(sa)
			}
			f.running("inst-sa-00-b", "sa-00", "rt-sa-00-b", time.Hour)
			wantTriggered = append(wantTriggered, "inst-sa-00-b")
			// sa-24's instance still provisions: DELETE halts it, so does the cleanup.
			f.provisioning("inst-sa-24", "sa-24")
			wantTriggered = append(wantTriggered, "inst-sa-24")
			// An instance of a subaccount nobody deleted stays.
			f.running("inst-alive", "sa-alive", "rt-alive", time.Hour)
			// One already deprovisioning (by a DELETE): counted, not touched.
			f.running("inst-going", "sa-going", "rt-going", time.Hour)
			going, _, err := f.store.CreateDeprovisioning(f.ctx, storage.Operation{ID: "dep-going", InstanceID: "inst-going",
				Type: storage.OperationTypeDeprovision, State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)})
			if err != nil {
				t.Fatal(err)
			}
			stub.Add("sa-going")

			counted, counter := pgtest.CountingPool(t, f.store.Pool())
			cs := &countingStore{Store: f.store, counted: storage.NewStore(counted, nil, nil), counter: counter}
			c := cleanup.NewSubaccountCleaner(cisClient(t, base, v, 10), cs, opTimeout, f.log)
			c.Chunk = 7

			rep, err := c.Run(f.ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Events != 26 || rep.Subaccounts != 26 || rep.Triggered != len(wantTriggered) || rep.AlreadyGoing != 1 || rep.Busy != 0 {
				t.Fatalf("report %+v; want 26 events and subaccounts, %d triggered, 1 already going", rep, len(wantTriggered))
			}
			// 26 events in chunks of 7: 4 lookups of one statement each.
			if fmt.Sprint(cs.lookups) != "[1 1 1 1]" {
				t.Fatalf("statements per lookup %v, want [1 1 1 1]", cs.lookups)
			}
			for _, id := range wantTriggered {
				if n, queued := f.deprovisionings(id); n != 1 || !queued || f.state(id) != storage.RuntimeDeprovisioning {
					t.Errorf("%s: %d deprovisionings (queued %v), state %s; want one, queued, deprovisioning", id, n, queued, f.state(id))
				}
			}
			// Their deprovisionings soft-delete the runtimes' BTP services.
			var marked int
			if err := f.store.Pool().QueryRow(f.ctx, `SELECT count(*) FROM operations WHERE type = 'deprovision'
				AND data->>'subaccountDeleted' = 'true'`).Scan(&marked); err != nil || marked != len(wantTriggered) {
				t.Errorf("%d deprovisionings marked subaccountDeleted (%v), want %d", marked, err, len(wantTriggered))
			}
			if n, _ := f.deprovisionings("inst-alive"); n != 0 || f.state("inst-alive") != storage.RuntimeSucceeded {
				t.Errorf("inst-alive was touched: %d deprovisionings, state %s", n, f.state("inst-alive"))
			}
			if last, err := f.store.LastOperation(f.ctx, "inst-going"); err != nil || last.ID != going.ID {
				t.Errorf("inst-going: last operation %s, %v; want the DELETE's %s", last.ID, err, going.ID)
			}
			// The provisioning of sa-24's instance was halted, as a DELETE halts it.
			if op, err := f.store.Operation(f.ctx, "inst-sa-24", "prov-inst-sa-24"); err != nil || op.State != storage.OperationFailed {
				t.Errorf("provisioning of inst-sa-24: %s, %v; want failed (halted)", op.State, err)
			}
			// The reference documentation's log line, per instance.
			logged := 0
			for _, e := range f.hook.AllEntries() {
				if strings.HasPrefix(e.Message, "deprovisioning for instance ") && strings.Contains(e.Message, "was triggered, operation: ") {
					logged++
				}
			}
			if logged != len(wantTriggered) {
				t.Errorf("%d 'was triggered' log lines, want %d", logged, len(wantTriggered))
			}
			if want := "deprovisioning for instance inst-sa-02 (SubAccountID: sa-02) was triggered, operation: "; !hasPrefix(f, want) {
				t.Errorf("no log line starting %q", want)
			}

			// A second pass finds nothing new.
			rep, err = c.Run(f.ctx, false)
			if err != nil || rep.Events != 0 || rep.Triggered != 0 {
				t.Fatalf("second pass: %+v, %v; want nothing", rep, err)
			}
		})
	}
}

func hasPrefix(f *fixture, prefix string) bool {
	for _, e := range f.hook.AllEntries() {
		if strings.HasPrefix(e.Message, prefix) {
			return true
		}
	}
	return false
}

// failingStore fails deprovisionings after the first n, as a database lost
// in the middle of a pass would.
type failingStore struct {
	*storage.Store
	n int
}

var errLost = errors.New("database connection lost")

func (s *failingStore) CreateDeprovisioning(ctx context.Context, op storage.Operation) (storage.Operation, bool, error) {
	if s.n == 0 {
		return storage.Operation{}, false, errLost
	}
	s.n--
	return s.Store.CreateDeprovisioning(ctx, op)
}

func TestSubaccountWatermarkAcrossRestarts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	stub, base := newCIS(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(from, to int, when time.Time) {
		for i := from; i < to; i++ {
			sa := fmt.Sprintf("sa-%02d", i)
			f.running("inst-"+sa, sa, "rt-"+sa, time.Hour)
			stub.AddAt(sa, when)
		}
	}
	add(0, 12, at)
	// Three events of one millisecond, the last of the first batch.
	add(12, 15, at.Add(time.Second))

	// Replica 1 loses the database after 9 deprovisionings (in its second
	// chunk of 5): the pass fails, the watermark stays after the 9 events
	// handled.
	c1 := cleanup.NewSubaccountCleaner(cisClient(t, base, cis.V2, 4), &failingStore{Store: f.store, n: 9}, opTimeout, f.log)
	c1.Chunk = 5
	rep1, err := c1.Run(f.ctx, false)
	if !errors.Is(err, errLost) || rep1.Triggered != 9 {
		t.Fatalf("first pass: %+v, %v; want 9 triggered, then the lost database", rep1, err)
	}
	wm, err := f.store.Watermark(f.ctx, cleanup.SubaccountJob)
	if err != nil || !wm.ActionTime.Equal(at) || len(wm.EventIDs) != 9 {
		t.Fatalf("watermark after the failed pass: %+v, %v; want %v with the 9 events handled", wm, err, at)
	}

	// Replica 2 (new client, new cleaner) carries on from the watermark.
	c2 := cleanup.NewSubaccountCleaner(cisClient(t, base, cis.V1, 4), f.store, opTimeout, f.log)
	c2.Chunk = 5
	rep2, err := c2.Run(f.ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	// The 6 events after the watermark, none of the 9 handled before.
	if rep2.Events != 6 || rep2.Triggered != 6 || rep2.AlreadyGoing != 0 {
		t.Fatalf("second pass: %+v; want 6 events, 6 triggered", rep2)
	}
	wm, _ = f.store.Watermark(f.ctx, cleanup.SubaccountJob)
	if !wm.ActionTime.Equal(at.Add(time.Second)) || len(wm.EventIDs) != 3 {
		t.Fatalf("watermark %+v; want %v with its 3 events", wm, at.Add(time.Second))
	}

	// New events, one in the watermark's own millisecond: a restarted
	// replica processes exactly these.
	add(15, 16, at.Add(time.Second))
	add(16, 20, at.Add(2*time.Second))
	c3 := cleanup.NewSubaccountCleaner(cisClient(t, base, cis.V2, 4), f.store, opTimeout, f.log)
	rep3, err := c3.Run(f.ctx, false)
	if err != nil || rep3.Events != 5 || rep3.Triggered != 5 || rep3.AlreadyGoing != 0 {
		t.Fatalf("third pass: %+v, %v; want exactly the 5 new events triggered", rep3, err)
	}
	for i := range 20 {
		id := fmt.Sprintf("inst-sa-%02d", i)
		if n, queued := f.deprovisionings(id); n != 1 || !queued {
			t.Errorf("%s: %d deprovisionings, queued %v; want exactly one", id, n, queued)
		}
	}
}

func TestSubaccountBusyInstanceKeepsItsEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	stub, base := newCIS(t)
	f.running("inst-a", "sa-a", "rt-a", time.Hour)
	f.running("inst-busy", "sa-busy", "rt-busy", time.Hour)
	f.running("inst-c", "sa-c", "rt-c", time.Hour)
	// An update runs on inst-busy: a DELETE would answer 422, the cleanup waits.
	f.updating("inst-busy", "upd-busy")
	for _, sa := range []string{"sa-a", "sa-busy", "sa-c"} {
		stub.Add(sa)
	}
	c := cleanup.NewSubaccountCleaner(cisClient(t, base, cis.V2, 10), f.store, opTimeout, f.log)

	// A dry run says so and changes nothing.
	dry, err := c.Run(f.ctx, true)
	if err != nil || dry.Triggered != 2 || dry.Busy != 1 {
		t.Fatalf("dry run: %+v, %v; want 2 to trigger, 1 busy", dry, err)
	}
	if n, _ := f.deprovisionings("inst-a"); n != 0 {
		t.Fatal("the dry run deprovisioned inst-a")
	}
	if wm, _ := f.store.Watermark(f.ctx, cleanup.SubaccountJob); !wm.ActionTime.IsZero() {
		t.Fatalf("the dry run moved the watermark to %+v", wm)
	}
	// Its log line says what it would do, not that it did it.
	summary := ""
	for _, e := range f.hook.AllEntries() {
		if strings.HasPrefix(e.Message, "subaccount cleanup") {
			summary = e.Message
		}
	}
	if !strings.Contains(summary, "(dry run)") || !strings.Contains(summary, "2 would trigger") || strings.Contains(summary, " triggered") {
		t.Fatalf("dry run logged %q", summary)
	}

	rep, err := c.Run(f.ctx, false)
	if err != nil || rep.Triggered != 2 || rep.Busy != 1 || rep.Stopped == "" {
		t.Fatalf("pass with a busy instance: %+v, %v; want 2 triggered, 1 busy, stopped", rep, err)
	}
	if n, _ := f.deprovisionings("inst-busy"); n != 0 {
		t.Fatal("the busy instance got a deprovisioning")
	}
	// The update ends; the next pass deprovisions it (and finds inst-c going).
	op, _, err := f.store.Work(f.ctx, "upd-busy")
	if err != nil {
		t.Fatal(err)
	}
	op.State = storage.OperationSucceeded
	if ok, err := f.store.Finish(f.ctx, op); err != nil || !ok {
		t.Fatalf("finishing the update: %v %v", ok, err)
	}
	rep, err = c.Run(f.ctx, false)
	if err != nil || rep.Events != 2 || rep.Triggered != 1 || rep.AlreadyGoing != 1 || rep.Stopped != "" {
		t.Fatalf("pass after the update: %+v, %v; want sa-busy's and sa-c's events, 1 triggered, 1 going", rep, err)
	}
	if n, queued := f.deprovisionings("inst-busy"); n != 1 || !queued {
		t.Fatalf("inst-busy: %d deprovisionings, queued %v", n, queued)
	}
}

func TestSubaccountCleanupReportsRefusedCredentials(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	stub, base := newCIS(t)
	f.running("inst-a", "sa-a", "rt-a", time.Hour)
	stub.Add("sa-a")
	stub.FailNext(1, 401)
	c := cleanup.NewSubaccountCleaner(cisClient(t, base, cis.V2, 10), f.store, opTimeout, f.log)
	if _, err := c.Run(f.ctx, false); !errors.Is(err, cis.ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if n, _ := f.deprovisionings("inst-a"); n != 0 {
		t.Fatal("deprovisioned although CIS refused the credentials")
	}
}
