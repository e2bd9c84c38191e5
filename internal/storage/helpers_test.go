package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testCtx bounds one test's database calls, so that a lock that is never
// released fails the test instead of hanging the package.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// fixture is one test's store over its own freshly migrated database.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool
	cipher *storage.Cipher
	store  *storage.Store
}

func newFixture(t *testing.T, enq storage.Enqueuer) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	c := mustCipher(t, b64KeyA)
	return &fixture{t: t, ctx: testCtx(t), pool: pool, cipher: c, store: storage.NewStore(pool, c, enq)}
}

func newInstance(id, globalAccount, planName string) storage.Instance {
	inst := storage.Instance{
		InstanceID:      id,
		GlobalAccountID: globalAccount,
		SubAccountID:    "sa-" + id,
		UserID:          "user@example.com",
		ServiceID:       "47c9dcbf-ff30-448e-ab36-d3bad66ba281",
		PlanID:          "plan-id-" + planName,
		PlanName:        planName,
		PlatformRegion:  "cf-eu10",
		Provider:        "azure",
		ProviderRegion:  "westeurope",
		Parameters:      []byte(`{"name":"c-` + id + `"}`),
		Context:         []byte(`{"globalaccount_id":"` + globalAccount + `"}`),
	}
	if planName == "trial" || planName == "free" {
		// What the broker writes for plans.yaml's onePerGlobalAccount plans.
		inst.OnePerGlobalAccountPlan = &planName
	}
	return inst
}

func newOperation(id, instanceID string, typ storage.OperationType) storage.Operation {
	return storage.Operation{
		ID:          id,
		InstanceID:  instanceID,
		Type:        typ,
		State:       storage.OperationInProgress,
		Description: string(typ) + " accepted",
		Deadline:    time.Now().Add(time.Hour),
	}
}

// provision writes an instance with an in-progress provisioning operation.
func (f *fixture) provision(instanceID, globalAccount, planName, opID string) {
	f.t.Helper()
	if err := f.store.CreateProvisioning(f.ctx, newInstance(instanceID, globalAccount, planName),
		newOperation(opID, instanceID, storage.OperationTypeProvision)); err != nil {
		f.t.Fatalf("CreateProvisioning(%s): %v", instanceID, err)
	}
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.pool.Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

func (f *fixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (f *fixture) instances(instanceID string) int {
	f.t.Helper()
	return f.count(`SELECT count(*) FROM instances WHERE instance_id = $1`, instanceID)
}

func (f *fixture) operations(instanceID string) int {
	f.t.Helper()
	return f.count(`SELECT count(*) FROM operations WHERE instance_id = $1`, instanceID)
}

// opState reads an operation's state straight from the table.
func (f *fixture) opState(opID string) (state storage.OperationState, description string, finished bool) {
	f.t.Helper()
	err := f.pool.QueryRow(f.ctx, `SELECT state, description, finished_at IS NOT NULL FROM operations WHERE operation_id = $1`,
		opID).Scan(&state, &description, &finished)
	if err != nil {
		f.t.Fatalf("reading operation %s: %v", opID, err)
	}
	return state, description, finished
}

// newTableQueue makes a test_queue table in pool and returns an enqueuer
// that writes a job row there in the caller's transaction: a queue whose
// rows the test can count.
func newTableQueue(t *testing.T, ctx context.Context, pool *pgxpool.Pool) storage.Enqueuer {
	t.Helper()
	if _, err := pool.Exec(ctx, `CREATE TABLE test_queue (id bigserial PRIMARY KEY, operation_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return enqueuerFunc(func(ctx context.Context, tx pgx.Tx, operationID string) (int64, error) {
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO test_queue (operation_id) VALUES ($1) RETURNING id`, operationID).Scan(&id)
		return id, err
	})
}

// enqueuerFunc adapts a function to storage.Enqueuer.
type enqueuerFunc func(ctx context.Context, tx pgx.Tx, operationID string) (int64, error)

func (f enqueuerFunc) EnqueueTx(ctx context.Context, tx pgx.Tx, operationID string) (int64, error) {
	return f(ctx, tx, operationID)
}

func (f enqueuerFunc) EnqueueManyTx(ctx context.Context, tx pgx.Tx, operationIDs []string) ([]int64, error) {
	ids := make([]int64, len(operationIDs))
	for i, id := range operationIDs {
		var err error
		if ids[i], err = f(ctx, tx, id); err != nil {
			return nil, err
		}
	}
	return ids, nil
}
