package deprovisioning_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/storage"
)

func TestArchive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		provState  storage.OperationState // the provisioning's state; "" with noProv
		noProv     bool
		provErr    error
		archiveErr error
		want       processtest.Outcome
		wantState  storage.OperationState
	}{
		{name: "succeeded provisioning", provState: storage.OperationSucceeded, want: processtest.Done, wantState: storage.OperationSucceeded},
		{name: "failed provisioning", provState: storage.OperationFailed, want: processtest.Done, wantState: storage.OperationFailed},
		{name: "provisioning halted in progress", provState: storage.OperationInProgress, want: processtest.Done, wantState: storage.OperationInProgress},
		{name: "no provisioning found: archived without its state", noProv: true, want: processtest.Done, wantState: ""},
		{name: "store unavailable reading the provisioning: temporary, nothing archived", provErr: errors.New("db down"), want: processtest.Temporary},
		// The store's transaction rolled back: the step runs again.
		{name: "archive and removal fail: temporary", provState: storage.OperationSucceeded, archiveErr: errors.New("db down"), want: processtest.Temporary},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := newOp(t)
			op.Instance.ShootName = "c-abc1234"
			store := &fakeStore{provErr: tc.provErr, archiveErr: tc.archiveErr}
			if !tc.noProv {
				store.provisioning = storage.Operation{ID: "prov-1", InstanceID: op.InstanceID,
					Type: storage.OperationTypeProvision, State: tc.provState}
			}
			step := &deprovisioning.Archive{Store: store}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "archive", tc.want, res, err)
			if tc.want != processtest.Done {
				if len(store.archived) != 0 {
					t.Errorf("archived %v although the step did not finish", store.archived)
				}
				return
			}
			if len(store.archived) != 1 || store.archiveCalls != 1 {
				t.Fatalf("archived %d rows in %d calls, want 1 in 1", len(store.archived), store.archiveCalls)
			}
			// Archive and removal are one call (one transaction); the
			// step never removes without archiving, nor separately.
			i := op.Instance
			want := storage.ArchivedInstance{
				InstanceID: i.InstanceID, RuntimeID: i.RuntimeID, GlobalAccountID: i.GlobalAccountID,
				SubAccountID: i.SubAccountID, PlanID: i.PlanID, PlanName: "azure", PlatformRegion: "cf-eu20",
				Provider: "azure", ProviderRegion: "westeurope", ShootName: "c-abc1234",
				ProvisioningState: tc.wantState, LastDeprovisioningID: op.ID,
				InstanceCreatedAt: i.CreatedAt, DeprovisioningStartedAt: op.CreatedAt,
				DeprovisioningDescription: deprovisioning.Done,
			}
			if g, w := processtest.MustJSON(t, store.archived[0]), processtest.MustJSON(t, want); g != w {
				t.Errorf("archived:\n got %s\nwant %s", g, w)
			}
			if op.Description == "" {
				t.Error("no description set")
			}
		})
	}
}

// TestArchiveSuspension: a suspended instance stays, so it is neither archived nor removed,
// whatever the store would answer.
func TestArchiveSuspension(t *testing.T) {
	t.Parallel()
	for _, storeErr := range []error{nil, errors.New("db down")} {
		t.Run(fmt.Sprintf("store error %v", storeErr), func(t *testing.T) {
			t.Parallel()
			op := newOp(t)
			op.Temporary = true
			store := &fakeStore{provErr: storeErr, archiveErr: storeErr,
				provisioning: storage.Operation{ID: "prov-1", InstanceID: op.InstanceID,
					Type: storage.OperationTypeProvision, State: storage.OperationSucceeded}}
			step := &deprovisioning.Archive{Store: store}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "archive", processtest.Done, res, err)
			if store.archiveCalls != 0 || len(store.opTypesAsked) != 0 {
				t.Errorf("ArchiveAndRemove called %d times, asked for %v; want nothing archived or removed and no question",
					store.archiveCalls, store.opTypesAsked)
			}
			if !strings.Contains(op.Description, "suspended") {
				t.Errorf("description %q does not say the instance is suspended", op.Description)
			}
			if !strings.Contains(op.Record.Conclusion, "instance suspended") {
				t.Errorf("conclusion %q does not say the instance is suspended", op.Record.Conclusion)
			}
		})
	}
}

// TestPipelineStepNames pins the step names and order: they are persisted in in-flight
// operations' checkpoints.
func TestPipelineStepNames(t *testing.T) {
	t.Parallel()
	want := []string{"initialization", "remove_bindings", "soft_delete_btp_services", "delete_kyma", "delete_runtime", "release_hyperscaler_secret", "archive"}
	pipe := deprovisioning.Pipeline(deprovisioning.Deps{})
	if len(pipe.Steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(pipe.Steps), len(want))
	}
	for i, s := range pipe.Steps {
		t.Run(want[i], func(t *testing.T) {
			t.Parallel()
			if s.Name() != want[i] {
				t.Errorf("step %d is %q, want %q", i, s.Name(), want[i])
			}
		})
	}
	if pipe.Done == "" {
		t.Error("no description for a succeeded deprovisioning")
	}
}
