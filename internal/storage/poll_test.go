package storage_test

import (
	"errors"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

func TestPollOperation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.provision("inst-1", "ga-1", "azure", "op-p")

	if _, err := f.store.PollOperation(f.ctx, "no-such-instance", ""); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unknown instance: err %v, want ErrNotFound", err)
	}
	got, err := f.store.PollOperation(f.ctx, "inst-1", "op-p")
	want := storage.OperationPoll{Found: true, Type: storage.OperationTypeProvision, State: storage.OperationInProgress,
		Description: "provision accepted"}
	if err != nil || got != want {
		t.Errorf("poll of the provisioning = %+v, %v; want %+v", got, err, want)
	}
	if got, err := f.store.PollOperation(f.ctx, "inst-1", "op-other"); err != nil || got.Found {
		t.Errorf("poll of an unknown operation = %+v, %v; want not found", got, err)
	}

	// A deprovisioning halts the provisioning; without an operation ID the
	// poll reads the newest one.
	if _, _, err := f.store.CreateDeprovisioning(f.ctx, newOperation("op-d", "inst-1", storage.OperationTypeDeprovision)); err != nil {
		t.Fatal(err)
	}
	if got, err := f.store.PollOperation(f.ctx, "inst-1", ""); err != nil || got.Type != storage.OperationTypeDeprovision || !got.InProgress() {
		t.Errorf("poll of the newest operation = %+v, %v; want the deprovisioning in progress", got, err)
	}
	if got, err := f.store.PollOperation(f.ctx, "inst-1", "op-p"); err != nil || got.State != storage.OperationFailed {
		t.Errorf("poll of the halted provisioning = %+v, %v; want failed", got, err)
	}
}
