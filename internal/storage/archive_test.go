package storage_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// deprovisioningInstance writes inst-1 with a succeeded provisioning (and
// sealed credentials) and an accepted deprovisioning op-d, and returns the
// archive summary the archive step would build for it.
func (f *fixture) deprovisioningInstance() storage.ArchivedInstance {
	f.t.Helper()
	inst := newInstance("inst-1", "ga-1", "azure")
	inst.Credentials = []byte(`{"clientid":"c","clientsecret":"s"}`)
	if err := f.store.CreateProvisioning(f.ctx, inst, newOperation("op-p", "inst-1", storage.OperationTypeProvision)); err != nil {
		f.t.Fatalf("CreateProvisioning: %v", err)
	}
	if ok, err := f.store.Finish(f.ctx, storage.Operation{ID: "op-p", State: storage.OperationSucceeded,
		FinishedStages: []string{"initialization"}}); err != nil || !ok {
		f.t.Fatalf("Finish = %v, %v", ok, err)
	}
	if _, created, err := f.store.CreateDeprovisioning(f.ctx,
		newOperation("op-d", "inst-1", storage.OperationTypeDeprovision)); err != nil || !created {
		f.t.Fatalf("CreateDeprovisioning = %v, %v", created, err)
	}
	stored, err := f.store.Instance(f.ctx, "inst-1")
	if err != nil {
		f.t.Fatal(err)
	}
	return storage.ArchivedInstance{
		InstanceID: "inst-1", RuntimeID: "rt-1", GlobalAccountID: "ga-1", SubAccountID: "sa-inst-1",
		PlanID: "plan-id-azure", PlanName: "azure", PlatformRegion: "cf-eu10", Provider: "azure",
		ProviderRegion: "westeurope", ShootName: "c-1234567", ProvisioningState: storage.OperationSucceeded,
		LastDeprovisioningID: "op-d", InstanceCreatedAt: stored.CreatedAt,
		DeprovisioningStartedAt: stored.CreatedAt.Add(time.Hour),
	}
}

func (f *fixture) archiveRows(instanceID string) int {
	f.t.Helper()
	return f.count(`SELECT count(*) FROM instances_archive WHERE instance_id = $1`, instanceID)
}

func TestArchiveAndRemove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	want := f.deprovisioningInstance()
	f.provision("inst-other", "ga-2", "azure", "op-other")

	if err := f.store.ArchiveAndRemove(f.ctx, want); err != nil {
		t.Fatalf("ArchiveAndRemove: %v", err)
	}
	if n, ops := f.instances("inst-1"), f.operations("inst-1"); n != 0 || ops != 0 {
		t.Fatalf("after ArchiveAndRemove: %d instances rows, %d operations; want none", n, ops)
	}
	got, err := f.store.Archived(f.ctx, "inst-1")
	if err != nil {
		t.Fatalf("Archived: %v", err)
	}
	if got.ArchivedAt.IsZero() {
		t.Error("archived_at not set")
	}
	got.ArchivedAt = time.Time{}
	got.InstanceCreatedAt, want.InstanceCreatedAt = got.InstanceCreatedAt.UTC(), want.InstanceCreatedAt.UTC()
	got.DeprovisioningStartedAt, want.DeprovisioningStartedAt = got.DeprovisioningStartedAt.UTC(), want.DeprovisioningStartedAt.UTC()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("archive row:\n got %+v\nwant %+v", got, want)
	}
	// Another instance is untouched.
	if n, ops := f.instances("inst-other"), f.operations("inst-other"); n != 1 || ops != 1 {
		t.Errorf("other instance: %d rows, %d operations; want 1 and 1", n, ops)
	}

	// The running deprovisioning went with its instance: its worker's next
	// save is told to stop, and the operation is no longer found.
	if _, ok, err := f.store.SaveProgress(f.ctx, storage.Operation{ID: "op-d", Stage: "archive",
		FinishedStages: []string{"archive"}}); err != nil || ok {
		t.Errorf("SaveProgress of the removed deprovisioning = %v, %v; want not ok, no error", ok, err)
	}
	if ok, err := f.store.Finish(f.ctx, storage.Operation{ID: "op-d", State: storage.OperationSucceeded,
		FinishedStages: []string{"archive"}}); err != nil || ok {
		t.Errorf("Finish of the removed deprovisioning = %v, %v; want false, no error", ok, err)
	}
	if _, _, err := f.store.Work(f.ctx, "op-d"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Work(op-d) = %v, want ErrNotFound", err)
	}
	if _, err := f.store.Instance(f.ctx, "inst-1"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Instance = %v, want ErrNotFound", err)
	}
	// The ID is never reused.
	if err := f.store.CreateProvisioning(f.ctx, newInstance("inst-1", "ga-1", "azure"),
		newOperation("op-again", "inst-1", storage.OperationTypeProvision)); !errors.Is(err, storage.ErrArchived) {
		t.Errorf("CreateProvisioning of the archived ID = %v, want ErrArchived", err)
	}

	// Twice (a step run again after a crash): no error, the first archive
	// row is kept as it was.
	again := want
	again.ShootName, again.LastDeprovisioningID = "c-other", "op-d2"
	if err := f.store.ArchiveAndRemove(f.ctx, again); err != nil {
		t.Fatalf("second ArchiveAndRemove: %v", err)
	}
	if n := f.archiveRows("inst-1"); n != 1 {
		t.Errorf("%d archive rows, want 1", n)
	}
	if a, err := f.store.Archived(f.ctx, "inst-1"); err != nil || a.ShootName != "c-1234567" || a.LastDeprovisioningID != "op-d" {
		t.Errorf("archive row after the second call = %+v, %v; want the first one", a, err)
	}
}

// TestArchiveAndRemoveIsAtomic: when the removal fails after the archive row
// was inserted, neither happens: the instance and its operations stay, with
// no archive row, and a retry does both.
func TestArchiveAndRemoveIsAtomic(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	a := f.deprovisioningInstance()
	// A row that refuses the instance's deletion (no cascade), so the
	// transaction fails at its second statement.
	f.exec(`CREATE TABLE pin (instance_id text REFERENCES instances (instance_id))`)
	f.exec(`INSERT INTO pin VALUES ('inst-1')`)

	err := f.store.ArchiveAndRemove(f.ctx, a)
	if err == nil || !strings.Contains(err.Error(), "removing instance inst-1") {
		t.Fatalf("ArchiveAndRemove = %v, want the removal's error", err)
	}
	if n := f.archiveRows("inst-1"); n != 0 {
		t.Errorf("%d archive rows after a failed ArchiveAndRemove, want 0", n)
	}
	if n, ops := f.instances("inst-1"), f.operations("inst-1"); n != 1 || ops != 2 {
		t.Errorf("after a failed ArchiveAndRemove: %d instances rows, %d operations; want 1 and 2", n, ops)
	}
	if state, _, finished := f.opState("op-d"); state != storage.OperationInProgress || finished {
		t.Errorf("deprovisioning %s (finished %v), want still in progress", state, finished)
	}
	if inst, err := f.store.Instance(f.ctx, "inst-1"); err != nil || string(inst.Credentials) == "" {
		t.Errorf("instance after a failed ArchiveAndRemove = %+v, %v; want it whole", inst, err)
	}

	f.exec(`DROP TABLE pin`)
	if err := f.store.ArchiveAndRemove(f.ctx, a); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if n, arch := f.instances("inst-1"), f.archiveRows("inst-1"); n != 0 || arch != 1 {
		t.Errorf("after the retry: %d instances rows, %d archive rows; want 0 and 1", n, arch)
	}
}

// TestMigrationRemovesArchivedInstances: 00006 deletes the instances (with
// their operations) that an older version left in both tables, and nothing
// else; its Down changes nothing.
func TestMigrationRemovesArchivedInstances(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	// Back to the schema before 00006 (and any later migration).
	downTo5 := func() {
		t.Helper()
		versions := migrationVersions(t)
		for i := len(versions) - 1; i >= 0 && versions[i] >= 6; i-- {
			want := versions[i]
			if v, err := storage.MigrateDown(ctx, pool); err != nil || v != want {
				t.Fatalf("MigrateDown = %d, %v; want %d rolled back", v, err, want)
			}
		}
	}
	downTo5()
	f := &fixture{t: t, ctx: ctx, pool: pool, cipher: mustCipher(t, b64KeyA)}
	f.store = storage.NewStore(pool, f.cipher, nil)
	// both: archived by an older archive step, not yet removed.
	// live: a deprovisioning before its archive step. archived: gone.
	for _, id := range []string{"both", "live"} {
		// SQL of the schema at 00005: the store writes today's columns.
		f.exec(`INSERT INTO instances (instance_id, global_account_id, subaccount_id, user_id, service_id, plan_id,
			plan_name, platform_region) VALUES ($1, $2, 'sa', 'u', 'svc', 'p', 'azure', 'cf-eu10')`, id, "ga-"+id)
		f.exec(`INSERT INTO operations (operation_id, instance_id, type, state, deadline)
			VALUES ($1, $2, 'provision', 'succeeded', now() + interval '1 hour')`, "op-p-"+id, id)
		f.exec(`INSERT INTO operations (operation_id, instance_id, type, state, deadline)
			VALUES ($1, $2, 'deprovision', 'in progress', now() + interval '1 hour')`, "op-d-"+id, id)
	}
	for _, id := range []string{"both", "archived"} {
		f.exec(`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
			plan_name, platform_region, provider, provider_region, last_deprovisioning_id, instance_created_at,
			deprovisioning_started_at) VALUES ($1, 'rt', 'ga', 'sa', 'p', 'azure', 'cf-eu10', 'azure',
			'westeurope', 'op-d-'||$1, now(), now())`, id)
	}

	applied, err := storage.MigrateUp(ctx, pool)
	if err != nil || len(applied) == 0 || applied[0] != 6 {
		t.Fatalf("MigrateUp = %v, %v; want 6 and on", applied, err)
	}
	check := func(when string) {
		t.Helper()
		for id, want := range map[string][3]int{ // instances, operations, archive rows
			"both": {0, 0, 1}, "live": {1, 2, 0}, "archived": {0, 0, 1},
		} {
			got := [3]int{f.instances(id), f.operations(id), f.archiveRows(id)}
			if got != want {
				t.Errorf("%s: %s has %d instances rows, %d operations, %d archive rows; want %v",
					when, id, got[0], got[1], got[2], want)
			}
		}
	}
	check("after 00006")
	downTo5()
	check("after rolling 00006 back")
	if applied, err := storage.MigrateUp(ctx, pool); err != nil || len(applied) == 0 || applied[0] != 6 {
		t.Fatalf("MigrateUp again = %v, %v", applied, err)
	}
	check("after 00006 again")
}
