package expiry_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/expiry"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	trialDuration = 14 * 24 * time.Hour
	opTimeout     = 24 * time.Hour
	// A fixed test key: 32 bytes, base64.
	testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
)

// fixture is one test's Expirer over a store on its own database.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	store   *storage.Store
	expirer *expiry.Expirer
	n       int // numbers operation IDs
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, map[string]time.Duration{catalog.TrialPlanName: trialDuration})
}

// newFixtureWith is a fixture whose Expirer has these plan lifetimes.
func newFixtureWith(t *testing.T, lifetimes map[string]time.Duration) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	pool := pgtest.NewPool(t) // migrated
	cipher, err := storage.NewCipher(testKey)
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(pool, cipher, nil)
	log := logrus.New()
	log.SetOutput(io.Discard)
	return &fixture{t: t, ctx: ctx, store: store, expirer: expiry.New(store, lifetimes, opTimeout, log)}
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.store.Pool().Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatal(err)
	}
}

// create writes an instance of the plan, created age ago, whose provisioning
// is in progress; it returns that operation's ID.
func (f *fixture) create(id, plan string, age time.Duration) string {
	f.t.Helper()
	f.n++
	opID := id + "-op-" + strconv.Itoa(f.n)
	inst := storage.Instance{
		InstanceID: id, GlobalAccountID: "ga-" + id, SubAccountID: "sa-" + id, UserID: "u", ServiceID: catalog.ServiceID,
		PlanID: "plan-" + plan, PlanName: plan, PlatformRegion: "cf-eu10", Provider: "azure", ProviderRegion: "westeurope",
		Parameters: []byte(`{"name":"` + id + `"}`), Context: []byte(`{}`),
	}
	op := storage.Operation{ID: opID, InstanceID: id, Type: storage.OperationTypeProvision, State: storage.OperationInProgress,
		Description: "accepted", Deadline: time.Now().Add(time.Hour)}
	if err := f.store.CreateProvisioning(f.ctx, inst, op); err != nil {
		f.t.Fatalf("creating %s: %v", id, err)
	}
	f.exec(`UPDATE instances SET created_at = now() - make_interval(secs => $2) WHERE instance_id = $1`, id, age.Seconds())
	return opID
}

// finish ends an operation as the engine does.
func (f *fixture) finish(opID string, state storage.OperationState) {
	f.t.Helper()
	op, _, err := f.store.Work(f.ctx, opID)
	if err != nil {
		f.t.Fatal(err)
	}
	op.State = state
	if ok, err := f.store.Finish(f.ctx, op); err != nil || !ok {
		f.t.Fatalf("finishing %s: %v %v", opID, ok, err)
	}
}

// running writes an instance whose provisioning succeeded.
func (f *fixture) running(id, plan string, age time.Duration) {
	f.t.Helper()
	f.finish(f.create(id, plan, age), storage.OperationSucceeded)
}

func (f *fixture) instance(id string) storage.Instance {
	f.t.Helper()
	inst, err := f.store.Instance(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return inst
}

func (f *fixture) last(id string) storage.Operation {
	f.t.Helper()
	op, err := f.store.LastOperation(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return op
}

func (f *fixture) operations() int {
	f.t.Helper()
	var n int
	if err := f.store.Pool().QueryRow(f.ctx, `SELECT count(*) FROM operations`).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// expectSuspending checks that id is expired and its suspension runs.
func (f *fixture) expectSuspending(id string) {
	f.t.Helper()
	inst, op := f.instance(id), f.last(id)
	if inst.ExpiredAt == nil || inst.State != storage.RuntimeDeprovisioning {
		f.t.Fatalf("%s: expired_at %v, state %s; want expired and deprovisioning", id, inst.ExpiredAt, inst.State)
	}
	if op.Type != storage.OperationTypeDeprovision || !op.Temporary || !op.InProgress() ||
		op.Deadline.Before(time.Now().Add(opTimeout-time.Hour)) {
		f.t.Fatalf("%s: suspension operation %+v", id, op)
	}
}

func (f *fixture) expectUntouched(id string, state storage.RuntimeState) {
	f.t.Helper()
	if inst := f.instance(id); inst.ExpiredAt != nil || inst.State != state {
		f.t.Fatalf("%s: expired_at %v, state %s; want not expired, %s", id, inst.ExpiredAt, inst.State, state)
	}
}

func TestExpireDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := trialDuration + time.Hour
	f.running("trial-old", catalog.TrialPlanName, old)
	f.running("trial-young", catalog.TrialPlanName, trialDuration-time.Hour)
	busyOp := f.create("trial-busy", catalog.TrialPlanName, old) // provisioning still runs
	f.running("trial-suspended", catalog.TrialPlanName, old)     // suspended by the platform, not expired
	f.exec(`UPDATE instances SET state = 'suspended' WHERE instance_id = 'trial-suspended'`)
	f.running("trial-expired", catalog.TrialPlanName, old) // expired before
	expiredBefore := time.Now().Add(-48 * time.Hour).UTC().Truncate(time.Microsecond)
	f.exec(`UPDATE instances SET expired_at = $1, state = 'suspended' WHERE instance_id = 'trial-expired'`, expiredBefore)
	f.running("azure-old", catalog.AzurePlanName, old)
	f.running("free-old", catalog.FreePlanName, old) // free expires only by an operator's PUT
	ops := f.operations()

	n, err := f.expirer.ExpireDue(f.ctx)
	if err != nil || n != 2 {
		t.Fatalf("ExpireDue = %d, %v; want 2 (trial-old, trial-suspended)", n, err)
	}
	f.expectSuspending("trial-old")
	// Already suspended: marked expired, nothing to run.
	if inst, op := f.instance("trial-suspended"), f.last("trial-suspended"); inst.ExpiredAt == nil ||
		inst.State != storage.RuntimeSuspended || op.Type != storage.OperationTypeProvision {
		t.Fatalf("trial-suspended: expired_at %v, state %s, last operation %s", inst.ExpiredAt, inst.State, op.Type)
	}
	f.expectUntouched("trial-young", storage.RuntimeSucceeded)
	f.expectUntouched("trial-busy", storage.RuntimeProvisioning)
	f.expectUntouched("azure-old", storage.RuntimeSucceeded)
	f.expectUntouched("free-old", storage.RuntimeSucceeded)
	if inst := f.instance("trial-expired"); inst.ExpiredAt == nil || !inst.ExpiredAt.Equal(expiredBefore) {
		t.Fatalf("trial-expired: expired_at moved to %v", inst.ExpiredAt)
	}
	if got := f.operations(); got != ops+1 {
		t.Fatalf("%d operations started, want 1", got-ops)
	}

	// Idempotent: a second run finds nothing new.
	expiredAt := *f.instance("trial-old").ExpiredAt
	if n, err := f.expirer.ExpireDue(f.ctx); err != nil || n != 0 {
		t.Fatalf("second ExpireDue = %d, %v; want 0", n, err)
	}
	if got := f.operations(); got != ops+1 {
		t.Fatalf("second run started %d operations", got-ops-1)
	}
	if at := f.instance("trial-old").ExpiredAt; !at.Equal(expiredAt) {
		t.Fatalf("second run moved expired_at from %v to %v", expiredAt, at)
	}

	// The busy trial is expired by a run after its operation ended.
	f.finish(busyOp, storage.OperationSucceeded)
	if n, err := f.expirer.ExpireDue(f.ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue after the operation ended = %d, %v; want 1", n, err)
	}
	f.expectSuspending("trial-busy")
	f.expectUntouched("trial-young", storage.RuntimeSucceeded)
	f.expectUntouched("free-old", storage.RuntimeSucceeded)

	// A suspension that failed is tried again by the next run, keeping the
	// first expiry time.
	expiredAt = *f.instance("trial-busy").ExpiredAt
	f.finish(f.last("trial-busy").ID, storage.OperationFailed)
	if n, err := f.expirer.ExpireDue(f.ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue after a failed suspension = %d, %v; want 1", n, err)
	}
	f.expectSuspending("trial-busy")
	if at := f.instance("trial-busy").ExpiredAt; !at.Equal(expiredAt) {
		t.Fatalf("retry moved expired_at from %v to %v", expiredAt, at)
	}
}

// TestLifetimes: the expiry job's lifetimes are plans.yaml's lifetimeDays
// (the embedded file gives the trial plan 14 days and the free plan 30, as
// upstream, and no other plan one);
// APP_TRIAL_DURATION replaces the trial's.
func TestLifetimes(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Load("")
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	if got, want := expiry.Lifetimes(cat.Plans(), 0, 0), map[string]time.Duration{catalog.TrialPlanName: 14 * day, catalog.FreePlanName: 30 * day}; !maps.Equal(got, want) {
		t.Errorf("lifetimes from plans.yaml = %v, want %v", got, want)
	}
	if got, want := expiry.Lifetimes(cat.Plans(), time.Hour, 2*time.Hour), map[string]time.Duration{catalog.TrialPlanName: time.Hour, catalog.FreePlanName: 2 * time.Hour}; !maps.Equal(got, want) {
		t.Errorf("lifetimes with APP_TRIAL_DURATION=1h, APP_FREE_DURATION=2h = %v, want %v", got, want)
	}
}

// TestExpireDueByPlanLifetime: each plan with a lifetime expires its own
// instances after it; plans without one never expire on their own.
func TestExpireDueByPlanLifetime(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, map[string]time.Duration{catalog.FreePlanName: 2 * time.Hour})
	f.running("free-old", catalog.FreePlanName, 3*time.Hour)
	f.running("free-young", catalog.FreePlanName, time.Hour)
	f.running("trial-old", catalog.TrialPlanName, 100*24*time.Hour)
	if n, err := f.expirer.ExpireDue(f.ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v; want 1 (free-old)", n, err)
	}
	f.expectSuspending("free-old")
	f.expectUntouched("free-young", storage.RuntimeSucceeded)
	f.expectUntouched("trial-old", storage.RuntimeSucceeded)
}

func TestExpire(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	t.Run("suspended trial: marked expired, nothing to run", func(t *testing.T) {
		f.running("trial-s", catalog.TrialPlanName, time.Hour)
		f.exec(`UPDATE instances SET state = 'suspended' WHERE instance_id = 'trial-s'`)
		ops := f.operations()
		res, err := f.expirer.Expire(f.ctx, "trial-s")
		if err != nil || res.OperationID != "" || res.ExpiredAt.IsZero() {
			t.Fatalf("Expire = %+v, %v", res, err)
		}
		inst := f.instance("trial-s")
		if inst.ExpiredAt == nil || !inst.ExpiredAt.Equal(res.ExpiredAt) || inst.State != storage.RuntimeSuspended {
			t.Fatalf("stored expired_at %v (answered %v), state %s", inst.ExpiredAt, res.ExpiredAt, inst.State)
		}
		if f.operations() != ops {
			t.Fatal("expiring a suspended trial started an operation")
		}
		// Again: the same answer.
		again, err := f.expirer.Expire(f.ctx, "trial-s")
		if err != nil || again.OperationID != "" || !again.ExpiredAt.Equal(res.ExpiredAt) {
			t.Fatalf("repeated Expire = %+v, %v; want %+v", again, err, res)
		}
	})

	t.Run("running free instance: suspended", func(t *testing.T) {
		f.running("free-1", catalog.FreePlanName, time.Hour)
		res, err := f.expirer.Expire(f.ctx, "free-1")
		if err != nil || res.OperationID == "" || res.ExpiredAt.IsZero() {
			t.Fatalf("Expire = %+v, %v", res, err)
		}
		f.expectSuspending("free-1")
		if op := f.last("free-1"); op.ID != res.OperationID {
			t.Fatalf("answered operation %s, started %s", res.OperationID, op.ID)
		}
		// While the suspension runs: busy.
		if _, err := f.expirer.Expire(f.ctx, "free-1"); !errors.Is(err, expiry.ErrBusy) {
			t.Fatalf("Expire while suspending: %v, want ErrBusy", err)
		}
		// A suspension that failed is started again on the next expiry; the
		// expiry time stays the first one.
		f.finish(res.OperationID, storage.OperationFailed)
		retry, err := f.expirer.Expire(f.ctx, "free-1")
		if err != nil || retry.OperationID == "" || retry.OperationID == res.OperationID || !retry.ExpiredAt.Equal(res.ExpiredAt) {
			t.Fatalf("Expire after a failed suspension = %+v, %v (first %+v)", retry, err, res)
		}
		f.expectSuspending("free-1")
		f.finish(retry.OperationID, storage.OperationSucceeded)
		if inst := f.instance("free-1"); inst.State != storage.RuntimeSuspended {
			t.Fatalf("state %s, want suspended", inst.State)
		}
	})

	t.Run("refusals write nothing", func(t *testing.T) {
		f.running("azure-1", catalog.AzurePlanName, time.Hour)
		f.create("trial-p", catalog.TrialPlanName, time.Hour)
		ops := f.operations()
		if _, err := f.expirer.Expire(f.ctx, "azure-1"); !errors.Is(err, expiry.ErrNotExpirable) {
			t.Fatalf("Expire of an azure instance: %v, want ErrNotExpirable", err)
		}
		if _, err := f.expirer.Expire(f.ctx, "trial-p"); !errors.Is(err, expiry.ErrBusy) {
			t.Fatalf("Expire while provisioning: %v, want ErrBusy", err)
		}
		if _, err := f.expirer.Expire(f.ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Expire of an unknown instance: %v, want ErrNotFound", err)
		}
		f.expectUntouched("azure-1", storage.RuntimeSucceeded)
		f.expectUntouched("trial-p", storage.RuntimeProvisioning)
		if f.operations() != ops {
			t.Fatal("a refused expiry started an operation")
		}
	})
}
