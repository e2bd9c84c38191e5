package deprovisioning_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// teardownSteps are the steps before archive; the tests below mark them
// finished, so that the engine runs the end of the pipeline (archive,
// remove_instance) on a real store without a control plane.
var teardownSteps = []string{"initialization", "remove_bindings", "delete_kyma", "delete_runtime", "release_hyperscaler_secret"}

// engineFixture is a real store and an engine running the deprovisioning
// pipeline on it.
type engineFixture struct {
	t      *testing.T
	ctx    context.Context
	store  *storage.Store
	engine *process.Engine
}

func newEngineFixture(t *testing.T) *engineFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	store := storage.NewStore(pgtest.NewPool(t), nil, nil)
	log := logrus.New()
	log.SetOutput(io.Discard)
	engine := process.NewEngine(store, map[storage.OperationType]process.Pipeline{
		storage.OperationTypeDeprovision: deprovisioning.Pipeline(deprovisioning.Deps{Store: store}),
	}, log)
	return &engineFixture{t: t, ctx: ctx, store: store, engine: engine}
}

func (f *engineFixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.store.Pool().Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

func (f *engineFixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.store.Pool().QueryRow(f.ctx, sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// deprovisioning writes a provisioned instance and accepts a deprovisioning
// of it whose checkpoints are finished; it returns the operation's ID.
func (f *engineFixture) deprovisioning(instanceID string, temporary bool, finished ...string) string {
	f.t.Helper()
	provID, depID := uuid.NewString(), uuid.NewString()
	err := f.store.CreateProvisioning(f.ctx, storage.Instance{
		InstanceID: instanceID, GlobalAccountID: "ga-" + instanceID, SubAccountID: "sa-" + instanceID,
		UserID: "jane.doe@example.com", ServiceID: "svc", PlanID: "plan-azure", PlanName: "azure",
		PlatformRegion: "cf-eu20", Provider: "azure", ProviderRegion: "westeurope",
	}, storage.Operation{ID: provID, InstanceID: instanceID, Type: storage.OperationTypeProvision,
		State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)})
	if err != nil {
		f.t.Fatalf("CreateProvisioning: %v", err)
	}
	if ok, err := f.store.Finish(f.ctx, storage.Operation{ID: provID, State: storage.OperationSucceeded,
		Description: "provisioned", FinishedStages: []string{"initialization"}}); err != nil || !ok {
		f.t.Fatalf("Finish(provisioning) = %v, %v", ok, err)
	}
	if _, created, err := f.store.CreateDeprovisioning(f.ctx, storage.Operation{ID: depID, InstanceID: instanceID,
		Type: storage.OperationTypeDeprovision, State: storage.OperationInProgress, Temporary: temporary,
		Deadline: time.Now().Add(time.Hour)}); err != nil || !created {
		f.t.Fatalf("CreateDeprovisioning = %v, %v", created, err)
	}
	f.exec(`UPDATE operations SET finished_stages = $2 WHERE operation_id = $1`, depID, finished)
	f.exec(`UPDATE instances SET shoot_name = 'c-1234567' WHERE instance_id = $1`, instanceID)
	return depID
}

// process runs the operation and expects the engine to be done with it.
func (f *engineFixture) process(opID string) {
	f.t.Helper()
	out, err := f.engine.Process(f.ctx, opID)
	if err != nil || out.RetryAfter != 0 {
		f.t.Fatalf("Process(%s) = %+v, %v; want done", opID, out, err)
	}
}

func (f *engineFixture) live(instanceID string) (instances, operations int) {
	f.t.Helper()
	return f.count(`SELECT count(*) FROM instances WHERE instance_id = $1`, instanceID),
		f.count(`SELECT count(*) FROM operations WHERE instance_id = $1`, instanceID)
}

// TestArchiveAndRemoveInEngine runs the end of the deprovisioning pipeline
// with the engine on real PostgreSQL: the archive step archives and removes
// the instance at once, so the engine's save finds the operation gone and
// stops; a suspension keeps its instance and archives nothing.
func TestArchiveAndRemoveInEngine(t *testing.T) {
	t.Parallel()

	t.Run("archive step archives and removes", func(t *testing.T) {
		t.Parallel()
		f := newEngineFixture(t)
		opID := f.deprovisioning("inst-new", false, teardownSteps...)
		f.process(opID)
		if inst, ops := f.live("inst-new"); inst != 0 || ops != 0 {
			t.Fatalf("after archive: %d instances, %d operations left; want none", inst, ops)
		}
		a, err := f.store.Archived(f.ctx, "inst-new")
		if err != nil {
			t.Fatalf("Archived: %v", err)
		}
		if a.LastDeprovisioningID != opID || a.ProvisioningState != storage.OperationSucceeded ||
			a.ShootName != "c-1234567" || a.GlobalAccountID != "ga-inst-new" {
			t.Errorf("archive row %+v", a)
		}
		// The archive keeps the instance's operations, the deprovisioning
		// as it ended (its own final save never happens).
		archived := func(when string) {
			t.Helper()
			h, err := f.store.ArchivedOperations(f.ctx, "inst-new")
			if err != nil || !h.Kept || len(h.Operations) != 2 {
				t.Fatalf("%s: archived operations %+v, %v; want the provisioning and the deprovisioning", when, h, err)
			}
			prov, dep := h.Operations[0], h.Operations[1]
			if prov.Type != storage.OperationTypeProvision || prov.State != storage.OperationSucceeded || prov.Description != "provisioned" {
				t.Errorf("%s: archived provisioning %+v", when, prov)
			}
			if dep.ID != opID || dep.State != storage.OperationSucceeded || dep.Description != deprovisioning.Done {
				t.Errorf("%s: archived deprovisioning %+v, want %s succeeded: %q", when, dep, opID, deprovisioning.Done)
			}
		}
		archived("archived")
		// Its job runs again (a retry after a lost acknowledgement): the
		// operation is gone, the engine is done with it.
		f.process(opID)
		if n := f.count(`SELECT count(*) FROM instances_archive`); n != 1 {
			t.Errorf("%d archive rows, want 1", n)
		}
		archived("after the job ran again")
	})

	t.Run("suspension keeps the instance", func(t *testing.T) {
		t.Parallel()
		f := newEngineFixture(t)
		opID := f.deprovisioning("inst-susp", true, teardownSteps...)
		f.process(opID)
		if inst, _ := f.live("inst-susp"); inst != 1 {
			t.Fatalf("suspended instance removed")
		}
		if n := f.count(`SELECT count(*) FROM instances_archive`); n != 0 {
			t.Errorf("%d archive rows for a suspension, want none", n)
		}
		if n := f.count(`SELECT count(*) FROM instances WHERE instance_id = 'inst-susp' AND state = 'suspended'`); n != 1 {
			t.Errorf("instance not suspended")
		}
		if n := f.count(`SELECT count(*) FROM operations WHERE operation_id = $1 AND state = 'succeeded'`, opID); n != 1 {
			t.Errorf("suspension not succeeded")
		}
	})
}
