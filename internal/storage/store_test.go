package storage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestCreateProvisioningWritesInstanceAndOperation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	inst := newInstance("inst-1", "ga-1", "azure")
	inst.Parameters = []byte(`{"name": "c1",  "region": "westeurope"}`)
	op := newOperation("op-1", "inst-1", storage.OperationTypeProvision)
	if err := f.store.CreateProvisioning(f.ctx, inst, op); err != nil {
		t.Fatalf("CreateProvisioning: %v", err)
	}

	got, err := f.store.Instance(f.ctx, "inst-1")
	if err != nil {
		t.Fatalf("Instance: %v", err)
	}
	if got.InstanceID != inst.InstanceID || got.GlobalAccountID != inst.GlobalAccountID || got.SubAccountID != inst.SubAccountID ||
		got.UserID != inst.UserID || got.ServiceID != inst.ServiceID || got.PlanID != inst.PlanID || got.PlanName != inst.PlanName ||
		got.PlatformRegion != inst.PlatformRegion || got.Provider != inst.Provider || got.ProviderRegion != inst.ProviderRegion {
		t.Errorf("instance read back differs:\n got %+v\nwant %+v", got, inst)
	}
	if !jsonEq(t, got.Parameters, inst.Parameters) || !jsonEq(t, got.Context, inst.Context) {
		t.Errorf("parameters/context read back as %s / %s", got.Parameters, got.Context)
	}
	if got.CreatedAt.IsZero() || got.Credentials != nil {
		t.Errorf("fresh instance: created_at %v, credentials %q", got.CreatedAt, got.Credentials)
	}

	last, err := f.store.LastOperation(f.ctx, "inst-1")
	if err != nil {
		t.Fatalf("LastOperation: %v", err)
	}
	if last.ID != "op-1" || last.Type != storage.OperationTypeProvision || !last.InProgress() || last.Description != op.Description {
		t.Errorf("last operation = %+v", last)
	}
	if d := last.Deadline.Sub(op.Deadline).Abs(); d > time.Microsecond {
		t.Errorf("deadline %v, want %v", last.Deadline, op.Deadline)
	}
	byID, err := f.store.Operation(f.ctx, "inst-1", "op-1")
	if err != nil || byID.ID != "op-1" {
		t.Errorf("Operation(inst-1, op-1) = %+v, %v", byID, err)
	}
}

func TestCreateProvisioningStoresEmptyJSONForAbsentFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	inst := newInstance("inst-1", "ga-1", "azure")
	inst.Parameters, inst.Context = nil, nil
	if err := f.store.CreateProvisioning(f.ctx, inst, newOperation("op-1", "inst-1", storage.OperationTypeProvision)); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Instance(f.ctx, "inst-1")
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEq(t, got.Parameters, []byte(`{}`)) || !jsonEq(t, got.Context, []byte(`{}`)) {
		t.Errorf("absent parameters/context stored as %s / %s, want {}", got.Parameters, got.Context)
	}
}

func TestReadsOfUnknownRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.provision("inst-1", "ga-1", "azure", "op-1")
	tests := []struct {
		name string
		read func() error
	}{
		{name: "Instance of unknown ID", read: func() error { _, err := f.store.Instance(f.ctx, "nope"); return err }},
		{name: "LastOperation of unknown instance", read: func() error { _, err := f.store.LastOperation(f.ctx, "nope"); return err }},
		{name: "Operation with unknown ID", read: func() error { _, err := f.store.Operation(f.ctx, "inst-1", "nope"); return err }},
		{name: "Operation of another instance", read: func() error { _, err := f.store.Operation(f.ctx, "nope", "op-1"); return err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.read(); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("error %v, want ErrNotFound", err)
			}
		})
	}
}

func TestCreateProvisioningIsAtomic(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.provision("inst-1", "ga-1", "azure", "op-taken")

	// The instance insert succeeds, the operation insert fails: nothing of
	// inst-2 may remain.
	err := f.store.CreateProvisioning(f.ctx, newInstance("inst-2", "ga-2", "azure"),
		newOperation("op-taken", "inst-2", storage.OperationTypeProvision))
	if err == nil {
		t.Fatal("CreateProvisioning with a duplicate operation ID succeeded")
	}
	if n := f.instances("inst-2"); n != 0 {
		t.Errorf("operation insert failed but %d instance row(s) of inst-2 remain", n)
	}
	if _, err := f.store.Instance(f.ctx, "inst-2"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Instance(inst-2) after failed provisioning: %v, want ErrNotFound", err)
	}
	// The first instance is untouched.
	if op, err := f.store.LastOperation(f.ctx, "inst-1"); err != nil || op.InstanceID != "inst-1" {
		t.Errorf("LastOperation(inst-1) = %+v, %v", op, err)
	}
}

func TestCreateProvisioningConflicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(f *fixture)
		inst    storage.Instance
		wantErr error
	}{
		{
			name:    "same instance ID",
			setup:   func(f *fixture) { f.provision("inst-1", "ga-1", "azure", "op-1") },
			inst:    newInstance("inst-1", "ga-1", "azure"),
			wantErr: storage.ErrAlreadyExists,
		},
		{
			name:    "same instance ID, different attributes",
			setup:   func(f *fixture) { f.provision("inst-1", "ga-1", "azure", "op-1") },
			inst:    newInstance("inst-1", "ga-9", "gcp"),
			wantErr: storage.ErrAlreadyExists,
		},
		{
			name:    "second trial of a global account",
			setup:   func(f *fixture) { f.provision("trial-1", "ga-1", "trial", "op-1") },
			inst:    newInstance("trial-2", "ga-1", "trial"),
			wantErr: storage.ErrOnePerGlobalAccount,
		},
		{
			name: "second trial once the first is deprovisioned",
			setup: func(f *fixture) {
				f.provision("trial-1", "ga-1", "trial", "op-1")
				// What ArchiveAndRemove does to a deprovisioned instance's row.
				f.exec(`DELETE FROM instances WHERE instance_id = 'trial-1'`)
			},
			inst: newInstance("trial-2", "ga-1", "trial"),
		},
		{
			name:  "trial of another global account",
			setup: func(f *fixture) { f.provision("trial-1", "ga-1", "trial", "op-1") },
			inst:  newInstance("trial-2", "ga-2", "trial"),
		},
		{
			name:    "second free instance of a global account",
			setup:   func(f *fixture) { f.provision("free-1", "ga-1", "free", "op-1") },
			inst:    newInstance("free-2", "ga-1", "free"),
			wantErr: storage.ErrOnePerGlobalAccount,
		},
		{
			name:  "free instance next to a trial of the same global account",
			setup: func(f *fixture) { f.provision("trial-1", "ga-1", "trial", "op-1") },
			inst:  newInstance("free-1", "ga-1", "free"),
		},
		{
			name:  "paid plan next to a trial of the same global account",
			setup: func(f *fixture) { f.provision("trial-1", "ga-1", "trial", "op-1") },
			inst:  newInstance("azure-1", "ga-1", "azure"),
		},
		{
			name: "two paid instances of one global account",
			setup: func(f *fixture) {
				f.provision("azure-1", "ga-1", "azure", "op-1")
			},
			inst: newInstance("azure-2", "ga-1", "azure"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			tc.setup(f)
			instancesBefore := f.count(`SELECT count(*) FROM instances`)
			err := f.store.CreateProvisioning(f.ctx, tc.inst, newOperation("op-new", tc.inst.InstanceID, storage.OperationTypeProvision))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("CreateProvisioning: %v", err)
				}
				if f.instances(tc.inst.InstanceID) != 1 || f.count(`SELECT count(*) FROM operations WHERE operation_id = 'op-new'`) != 1 {
					t.Error("accepted provisioning did not write its instance and operation")
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if n := f.count(`SELECT count(*) FROM instances`); n != instancesBefore {
				t.Errorf("%d instances after a refused provisioning, want %d", n, instancesBefore)
			}
			if n := f.count(`SELECT count(*) FROM operations WHERE operation_id = 'op-new'`); n != 0 {
				t.Errorf("refused provisioning left its operation behind")
			}
		})
	}
}

func TestCredentialsSealedAtRest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	const secret = "very-secret-client-secret"
	creds := []byte(`{"clientid":"cid","clientsecret":"` + secret + `","sm_url":"https://sm","url":"https://uaa"}`)
	inst := newInstance("inst-1", "ga-1", "azure")
	inst.Credentials = creds
	if err := f.store.CreateProvisioning(f.ctx, inst, newOperation("op-1", "inst-1", storage.OperationTypeProvision)); err != nil {
		t.Fatal(err)
	}
	f.provision("inst-2", "ga-2", "azure", "op-2") // without credentials

	got, err := f.store.Instance(f.ctx, "inst-1")
	if err != nil {
		t.Fatalf("Instance: %v", err)
	}
	if !bytes.Equal(got.Credentials, creds) {
		t.Errorf("credentials read back as %q, want %q", got.Credentials, creds)
	}

	var column *string
	var rowText string
	if err := f.pool.QueryRow(f.ctx, `SELECT encrypted_credentials, i::text FROM instances i WHERE instance_id = 'inst-1'`).
		Scan(&column, &rowText); err != nil {
		t.Fatal(err)
	}
	if column == nil {
		t.Fatal("encrypted_credentials is NULL for an instance with credentials")
	}
	if !strings.HasPrefix(*column, "v1."+f.cipher.KeyID()+".") {
		t.Errorf("encrypted_credentials %.30q... is not sealed with the current key", *column)
	}
	if strings.Contains(rowText, secret) || strings.Contains(rowText, "clientsecret") {
		t.Errorf("the instance row holds the plaintext credentials: %s", rowText)
	}

	var none *string
	if err := f.pool.QueryRow(f.ctx, `SELECT encrypted_credentials FROM instances WHERE instance_id = 'inst-2'`).Scan(&none); err != nil {
		t.Fatal(err)
	}
	if none != nil {
		t.Errorf("instance without credentials has encrypted_credentials %q, want NULL", *none)
	}
	if got, err := f.store.Instance(f.ctx, "inst-2"); err != nil || got.Credentials != nil {
		t.Errorf("Instance(inst-2): credentials %q, err %v; want nil, nil", got.Credentials, err)
	}

	// A sealed value copied onto another row does not open there.
	f.exec(`UPDATE instances SET encrypted_credentials = $1 WHERE instance_id = 'inst-2'`, *column)
	if _, err := f.store.Instance(f.ctx, "inst-2"); err == nil {
		t.Error("credentials copied from inst-1 opened as inst-2's")
	}
}

func TestCredentialsReadableAfterKeyRotation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	inst := newInstance("inst-1", "ga-1", "azure")
	inst.Credentials = []byte(`{"clientsecret":"x"}`)
	if err := f.store.CreateProvisioning(f.ctx, inst, newOperation("op-1", "inst-1", storage.OperationTypeProvision)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		keys    []string
		wantErr []string
	}{
		{name: "new key, old one listed as previous", keys: []string{b64KeyB, b64KeyA}},
		{name: "new key only", keys: []string{b64KeyB}, wantErr: []string{"inst-1", f.cipher.KeyID(), "APP_DATABASE_SECRET_KEYS_PREVIOUS"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := storage.NewStore(f.pool, mustCipher(t, tc.keys[0], tc.keys[1:]...), nil)
			got, err := s.Instance(f.ctx, "inst-1")
			if tc.wantErr == nil {
				if err != nil || string(got.Credentials) != `{"clientsecret":"x"}` {
					t.Errorf("Instance = %q, %v", got.Credentials, err)
				}
				return
			}
			if err == nil {
				t.Fatal("Instance opened credentials sealed with a key it was not given")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestEnqueuerRunsInsideTheTransaction(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	s := storage.NewStore(pool, mustCipher(t, b64KeyA), newTableQueue(t, ctx, pool))

	if err := s.CreateProvisioning(ctx, newInstance("inst-1", "ga-1", "azure"), newOperation("op-p", "inst-1", storage.OperationTypeProvision)); err != nil {
		t.Fatalf("CreateProvisioning: %v", err)
	}
	if _, _, err := s.CreateDeprovisioning(ctx, newOperation("op-d", "inst-1", storage.OperationTypeDeprovision)); err != nil {
		t.Fatalf("CreateDeprovisioning: %v", err)
	}
	// A rejected request leaves no job behind: the enqueuer's write rolls
	// back with the transaction (the instance ID is taken).
	if err := s.CreateProvisioning(ctx, newInstance("inst-1", "ga-1", "azure"), newOperation("op-again", "inst-1", storage.OperationTypeProvision)); !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("CreateProvisioning of a taken ID: %v, want ErrAlreadyExists", err)
	}
	// Every operation carries its own job's ID.
	rows, _ := pool.Query(ctx, `SELECT q.operation_id || '=' || coalesce(o.operation_id, 'none')
		FROM test_queue q LEFT JOIN operations o ON o.job_id = q.id ORDER BY q.id`)
	linked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := "op-p=op-p,op-d=op-d"; strings.Join(linked, ",") != want {
		t.Errorf("queue and operations linked as %v, want %s", linked, want)
	}
}

func TestFailingEnqueuerRollsBack(t *testing.T) {
	t.Parallel()
	errQueue := errors.New("queue is full")
	failing := enqueuerFunc(func(ctx context.Context, tx pgx.Tx, operationID string) (int64, error) { return 0, errQueue })

	t.Run("provisioning", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, failing)
		err := f.store.CreateProvisioning(f.ctx, newInstance("inst-1", "ga-1", "azure"), newOperation("op-1", "inst-1", storage.OperationTypeProvision))
		if !errors.Is(err, errQueue) {
			t.Fatalf("error %v, want one wrapping the enqueuer's", err)
		}
		if f.instances("inst-1") != 0 || f.operations("inst-1") != 0 {
			t.Errorf("failed enqueue left %d instance(s) and %d operation(s)", f.instances("inst-1"), f.operations("inst-1"))
		}
	})
	t.Run("deprovisioning", func(t *testing.T) {
		t.Parallel()
		// The provisioning goes in without an enqueuer, the deprovisioning
		// with a failing one: the halt of the provisioning must roll back too.
		f := newFixture(t, nil)
		f.provision("inst-1", "ga-1", "azure", "op-p")
		s := storage.NewStore(f.pool, f.cipher, failing)
		_, created, err := s.CreateDeprovisioning(f.ctx, newOperation("op-d", "inst-1", storage.OperationTypeDeprovision))
		if !errors.Is(err, errQueue) || created {
			t.Fatalf("CreateDeprovisioning: created %v, error %v; want the enqueuer's error", created, err)
		}
		if n := f.operations("inst-1"); n != 1 {
			t.Errorf("%d operations after a failed deprovisioning, want only the provisioning", n)
		}
		if state, _, _ := f.opState("op-p"); state != storage.OperationInProgress {
			t.Errorf("provisioning is %q after the deprovisioning rolled back, want it still in progress", state)
		}
	})
}

func TestCreateDeprovisioning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup leaves inst-1 (or not) in the state under test.
		setup func(f *fixture)
		// wantErr, or else the operation ID returned and whether it is new.
		wantErr     error
		wantID      string
		wantCreated bool
		// check looks at the tables afterwards.
		check func(t *testing.T, f *fixture)
	}{
		{
			name:    "unknown instance",
			setup:   func(f *fixture) {},
			wantErr: storage.ErrNotFound,
		},

		{
			name:        "provisioning in progress is halted",
			setup:       func(f *fixture) { f.provision("inst-1", "ga-1", "azure", "op-p") },
			wantID:      "op-d",
			wantCreated: true,
			check: func(t *testing.T, f *fixture) {
				state, desc, finished := f.opState("op-p")
				if state != storage.OperationFailed || !finished || !strings.Contains(desc, "deprovisioning") {
					t.Errorf("halted provisioning: state %q, finished %v, description %q", state, finished, desc)
				}
				last, err := f.store.LastOperation(f.ctx, "inst-1")
				if err != nil || last.ID != "op-d" || !last.InProgress() || last.Type != storage.OperationTypeDeprovision {
					t.Errorf("LastOperation = %+v, %v; want the in-progress deprovisioning", last, err)
				}
			},
		},
		{
			name: "provisioning succeeded",
			setup: func(f *fixture) {
				f.provision("inst-1", "ga-1", "azure", "op-p")
				f.exec(`UPDATE operations SET state = 'succeeded', finished_at = now()`)
			},
			wantID:      "op-d",
			wantCreated: true,
			check: func(t *testing.T, f *fixture) {
				if state, _, _ := f.opState("op-p"); state != storage.OperationSucceeded {
					t.Errorf("finished provisioning changed to %q", state)
				}
			},
		},
		{
			name: "provisioning failed",
			setup: func(f *fixture) {
				f.provision("inst-1", "ga-1", "azure", "op-p")
				f.exec(`UPDATE operations SET state = 'failed', finished_at = now()`)
			},
			wantID:      "op-d",
			wantCreated: true,
		},
		{
			name: "deprovisioning already in progress",
			setup: func(f *fixture) {
				f.provision("inst-1", "ga-1", "azure", "op-p")
				f.exec(`UPDATE operations SET state = 'succeeded'`)
				f.exec(`INSERT INTO operations (operation_id, instance_id, type, state, deadline)
					VALUES ('op-d-first', 'inst-1', 'deprovision', 'in progress', now() + interval '1 hour')`)
			},
			wantID:      "op-d-first",
			wantCreated: false,
			check: func(t *testing.T, f *fixture) {
				if n := f.operations("inst-1"); n != 2 {
					t.Errorf("%d operations, want the provisioning and the first deprovisioning only", n)
				}
			},
		},
		{
			name: "update in progress",
			setup: func(f *fixture) {
				f.provision("inst-1", "ga-1", "azure", "op-p")
				f.exec(`UPDATE operations SET state = 'succeeded'`)
				f.exec(`INSERT INTO operations (operation_id, instance_id, type, state, deadline)
					VALUES ('op-u', 'inst-1', 'update', 'in progress', now() + interval '1 hour')`)
			},
			wantErr: storage.ErrOperationInProgress,
			check: func(t *testing.T, f *fixture) {
				if n := f.operations("inst-1"); n != 2 {
					t.Errorf("%d operations, want no deprovisioning added", n)
				}
				if state, _, _ := f.opState("op-u"); state != storage.OperationInProgress {
					t.Errorf("update changed to %q", state)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			tc.setup(f)
			op, created, err := f.store.CreateDeprovisioning(f.ctx, newOperation("op-d", "inst-1", storage.OperationTypeDeprovision))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				if created {
					t.Error("created is true on error")
				}
			} else {
				if err != nil {
					t.Fatalf("CreateDeprovisioning: %v", err)
				}
				if op.ID != tc.wantID || created != tc.wantCreated {
					t.Errorf("got operation %s (created %v), want %s (created %v)", op.ID, created, tc.wantID, tc.wantCreated)
				}
				if op.Type != storage.OperationTypeDeprovision || !op.InProgress() {
					t.Errorf("returned operation is a %q in state %q", op.Type, op.State)
				}
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func TestOneActiveOperationPerInstance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		state     string
		wantError bool
	}{
		{name: "second in-progress operation", state: "in progress", wantError: true},
		{name: "finished operation next to a running one", state: "succeeded"},
		{name: "failed operation next to a running one", state: "failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			f.provision("inst-1", "ga-1", "azure", "op-p") // in progress
			_, err := f.pool.Exec(f.ctx, `INSERT INTO operations (operation_id, instance_id, type, state, deadline)
				VALUES ('op-2', 'inst-1', 'update', $1, now())`, tc.state)
			if !tc.wantError {
				if err != nil {
					t.Fatalf("insert: %v", err)
				}
				return
			}
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "operations_one_active_per_instance" {
				t.Fatalf("insert of a second in-progress operation: %v, want a unique violation of operations_one_active_per_instance", err)
			}
		})
	}
	t.Run("other instances are independent", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, nil)
		f.provision("inst-1", "ga-1", "azure", "op-1")
		f.provision("inst-2", "ga-1", "azure", "op-2")
		if n := f.count(`SELECT count(*) FROM operations WHERE state = 'in progress'`); n != 2 {
			t.Errorf("%d operations in progress, want 2", n)
		}
	})
}

func TestConcurrentDeprovisioningsCreateOne(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(f *fixture)
	}{
		{name: "provisioned instance", setup: func(f *fixture) {
			f.provision("inst-1", "ga-1", "azure", "op-p")
			f.exec(`UPDATE operations SET state = 'succeeded'`)
		}},
		{name: "provisioning in progress", setup: func(f *fixture) { f.provision("inst-1", "ga-1", "azure", "op-p") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil)
			tc.setup(f)
			const callers = 10
			var wg sync.WaitGroup
			ids := make([]string, callers)
			createdBy := make([]bool, callers)
			errs := make([]error, callers)
			start := make(chan struct{})
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					op, created, err := f.store.CreateDeprovisioning(f.ctx,
						newOperation(fmt.Sprintf("op-d-%d", i), "inst-1", storage.OperationTypeDeprovision))
					ids[i], createdBy[i], errs[i] = op.ID, created, err
				}()
			}
			close(start)
			wg.Wait()

			creators := 0
			for i := range callers {
				if errs[i] != nil {
					t.Errorf("caller %d: %v", i, errs[i])
				}
				if createdBy[i] {
					creators++
				}
				if ids[i] != ids[0] {
					t.Errorf("caller %d got operation %q, caller 0 got %q", i, ids[i], ids[0])
				}
			}
			if creators != 1 {
				t.Errorf("%d callers were told they created the deprovisioning, want 1", creators)
			}
			rows, _ := f.pool.Query(f.ctx, `SELECT operation_id FROM operations WHERE type = 'deprovision'`)
			stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != 1 || stored[0] != ids[0] {
				t.Errorf("deprovisionings stored: %v, want exactly the one returned (%s)", stored, ids[0])
			}
		})
	}
}

func jsonEq(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// A deprovisioning that archives an ID while a re-sent PUT's instance insert
// waits on the old row: the insert then goes in (the row is gone), and the
// operation's insert, with the COMMIT pipelined behind it, must fail on the
// archive so that nothing of the PUT is committed, its job neither.
func TestProvisioningOfAnIDArchivedWhileItsInsertWaits(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	s := storage.NewStore(pool, mustCipher(t, b64KeyA), newTableQueue(t, ctx, pool))
	if err := s.CreateProvisioning(ctx, newInstance("inst-1", "ga-1", "azure"), newOperation("op-p", "inst-1", storage.OperationTypeProvision)); err != nil {
		t.Fatalf("CreateProvisioning: %v", err)
	}

	// What ArchiveAndRemove does, held open.
	archiver, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = archiver.Rollback(ctx) }()
	if _, err := archiver.Exec(ctx, `INSERT INTO instances_archive (instance_id, runtime_id, global_account_id,
		subaccount_id, plan_id, plan_name, platform_region, provider, provider_region, last_deprovisioning_id,
		instance_created_at, deprovisioning_started_at)
		SELECT instance_id, runtime_id, global_account_id, subaccount_id, plan_id, plan_name, platform_region, provider,
			provider_region, 'op-d', created_at, now() FROM instances WHERE instance_id = 'inst-1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := archiver.Exec(ctx, `DELETE FROM instances WHERE instance_id = 'inst-1'`); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		done <- s.CreateProvisioning(ctx, newInstance("inst-1", "ga-1", "azure"), newOperation("op-again", "inst-1", storage.OperationTypeProvision))
	}()
	// The PUT's instance insert waits for the archiver's row lock.
	for {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("CreateProvisioning returned %v before the archive was committed", err)
		case <-ctx.Done():
			t.Fatal("the PUT's insert never waited for the archiving transaction")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := archiver.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, storage.ErrArchived) {
		t.Fatalf("CreateProvisioning of an ID archived meanwhile = %v, want ErrArchived", err)
	}
	var instances, operations, jobs int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM instances WHERE instance_id = 'inst-1'),
		(SELECT count(*) FROM operations WHERE operation_id = 'op-again'),
		(SELECT count(*) FROM test_queue WHERE operation_id = 'op-again')`).Scan(&instances, &operations, &jobs); err != nil {
		t.Fatal(err)
	}
	if instances+operations+jobs != 0 {
		t.Errorf("the refused PUT left %d instance(s), %d operation(s), %d job(s)", instances, operations, jobs)
	}
}
