package cleanup_test

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

var kcp *k8stest.Environment

func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &kcp, pgtest.Run)) }

const (
	opTimeout = 24 * time.Hour
	// A fixed test key: 32 bytes, base64.
	testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
)

// fixture is one test's store (queueing into River as production does) on
// its own database, and a logger whose entries the test can read.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	store *storage.Store
	log   *logrus.Logger
	hook  *test.Hook
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	pool := pgtest.NewPool(t)
	cipher, err := storage.NewCipher(testKey)
	if err != nil {
		t.Fatal(err)
	}
	log, hook := test.NewNullLogger()
	log.SetOutput(io.Discard)
	queue, err := process.NewQueue(pool, process.QueueConfig{}, log)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, store: storage.NewStore(pool, cipher, queue), log: log, hook: hook}
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.store.Pool().Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatal(err)
	}
}

// running writes an instance of the subaccount whose provisioning succeeded
// with the runtime ID, created age ago.
func (f *fixture) running(id, subaccount, runtimeID string, age time.Duration) {
	f.t.Helper()
	opID := f.provisioning(id, subaccount)
	f.exec(`UPDATE instances SET runtime_id = $2, created_at = now() - make_interval(secs => $3) WHERE instance_id = $1`,
		id, runtimeID, age.Seconds())
	op, _, err := f.store.Work(f.ctx, opID)
	if err != nil {
		f.t.Fatal(err)
	}
	op.State = storage.OperationSucceeded
	if ok, err := f.store.Finish(f.ctx, op); err != nil || !ok {
		f.t.Fatalf("finishing %s: %v %v", opID, ok, err)
	}
}

// provisioning writes an instance whose provisioning is in progress and
// returns the operation's ID.
func (f *fixture) provisioning(id, subaccount string) string {
	f.t.Helper()
	inst := storage.Instance{
		InstanceID: id, GlobalAccountID: "ga-" + id, SubAccountID: subaccount, UserID: "u", ServiceID: catalog.ServiceID,
		PlanID: "plan-azure", PlanName: catalog.AzurePlanName, PlatformRegion: "cf-eu10", Provider: "azure",
		ProviderRegion: "westeurope", Parameters: []byte(`{"name":"` + id + `"}`), Context: []byte(`{}`),
	}
	op := storage.Operation{ID: "prov-" + id, InstanceID: id, Type: storage.OperationTypeProvision,
		State: storage.OperationInProgress, Description: "accepted", Deadline: time.Now().Add(time.Hour)}
	if err := f.store.CreateProvisioning(f.ctx, inst, op); err != nil {
		f.t.Fatalf("creating %s: %v", id, err)
	}
	return op.ID
}

// deprovisionings counts the instance's deprovisioning operations and
// reports whether the last one is in progress with a River job.
func (f *fixture) deprovisionings(id string) (n int, queued bool) {
	f.t.Helper()
	err := f.store.Pool().QueryRow(f.ctx, `SELECT count(*),
			coalesce(bool_or(o.state = 'in progress' AND EXISTS (SELECT 1 FROM river_job j WHERE j.id = o.job_id)), false)
		FROM operations o WHERE o.instance_id = $1 AND o.type = 'deprovision'`, id).Scan(&n, &queued)
	if err != nil {
		f.t.Fatal(err)
	}
	return n, queued
}

func (f *fixture) state(id string) storage.RuntimeState {
	f.t.Helper()
	inst, err := f.store.Instance(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return inst.State
}

// updating starts an update of the instance: a DELETE would answer 422 now.
func (f *fixture) updating(id, opID string) {
	f.t.Helper()
	upd := storage.Operation{ID: opID, InstanceID: id, Type: storage.OperationTypeUpdate,
		State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}
	if err := f.store.ChangeInstance(f.ctx, id, func(storage.Instance, *storage.Operation) (storage.InstanceChange, error) {
		return storage.InstanceChange{Operation: &upd}, nil
	}); err != nil {
		f.t.Fatal(err)
	}
}
