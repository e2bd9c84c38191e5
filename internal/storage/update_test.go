package storage_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

// TestUpdateRecorded: an update operation carries its request through the
// database, and a successful update replaces the instance's plan and
// parameters in one write with one history entry, however often it is
// recorded; a trial that became paid frees its global account for a new
// trial.
func TestUpdateRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.provision("inst-1", "ga-1", "trial", "op-prov")
	f.exec(`UPDATE operations SET state = 'succeeded' WHERE operation_id = 'op-prov'`)

	req := &storage.UpdateRequest{PlanID: "plan-id-aws", PlanName: "aws", Parameters: json.RawMessage(`{"name":"c-inst-1","region":"eu-central-1"}`)}
	op := newOperation("op-upd", "inst-1", storage.OperationTypeUpdate)
	op.Request = req
	if err := f.store.ChangeInstance(f.ctx, "inst-1", func(storage.Instance, *storage.Operation) (storage.InstanceChange, error) {
		return storage.InstanceChange{Operation: &op}, nil
	}); err != nil {
		t.Fatal(err)
	}
	got, inst, err := f.store.Work(f.ctx, "op-upd")
	if err != nil {
		t.Fatal(err)
	}
	if got.Request == nil || got.Request.PlanName != "aws" || string(got.Request.Parameters) != `{"name": "c-inst-1", "region": "eu-central-1"}` {
		t.Fatalf("request read back: %+v", got.Request)
	}
	if inst.PlanName != "trial" {
		t.Fatalf("the instance changed plan before the update succeeded: %s", inst.PlanName)
	}
	prov, err := f.store.LastOperationOfType(f.ctx, "inst-1", storage.OperationTypeProvision)
	if err != nil || prov.Request != nil {
		t.Fatalf("provisioning's request: %+v, %v", prov.Request, err)
	}

	u := storage.Updated{PlanID: "plan-id-aws", PlanName: "aws", Provider: "aws", ProviderRegion: "eu-central-1",
		Parameters: req.Parameters, ResolvedParameters: json.RawMessage(`{"region":"eu-central-1"}`),
		Action: &storage.Action{OperationID: "op-upd", Type: storage.ActionPlanUpdate, Message: "plan changed", OldValue: "trial", NewValue: "aws"}}
	for range 2 {
		if err := f.store.SetUpdated(f.ctx, "inst-1", u); err != nil {
			t.Fatal(err)
		}
	}
	inst, err = f.store.Instance(f.ctx, "inst-1")
	if err != nil {
		t.Fatal(err)
	}
	if inst.PlanName != "aws" || inst.PlanID != "plan-id-aws" || inst.Provider != "aws" || inst.ProviderRegion != "eu-central-1" {
		t.Fatalf("instance after update: %+v", inst)
	}
	actions, err := f.store.Actions(f.ctx, "inst-1", "other")
	if err != nil {
		t.Fatal(err)
	}
	if a := actions["inst-1"]; len(a) != 1 || a[0].OldValue != "trial" || a[0].NewValue != "aws" || a[0].Type != storage.ActionPlanUpdate || len(actions) != 1 {
		t.Fatalf("actions: %+v", actions)
	}
	// The global account holds no trial any more.
	f.provision("inst-2", "ga-1", "trial", "op-prov-2")
	// A trial whose parameters change stays the account's one trial.
	if err := f.store.SetUpdated(f.ctx, "inst-2", storage.Updated{PlanID: "plan-id-trial", PlanName: "trial",
		Provider: "azure", ProviderRegion: "westeurope", Parameters: json.RawMessage(`{"name":"renamed"}`)}); err != nil {
		t.Fatal(err)
	}
	err = f.store.CreateProvisioning(f.ctx, newInstance("inst-3", "ga-1", "trial"),
		newOperation("op-prov-3", "inst-3", storage.OperationTypeProvision))
	if !errors.Is(err, storage.ErrOnePerGlobalAccount) {
		t.Fatalf("a second trial next to an updated one: %v, want ErrOnePerGlobalAccount", err)
	}
}
