package deprovisioning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// archiver archives a deprovisioned instance and removes it, in one
// transaction.
type archiver interface {
	ArchiveAndRemove(ctx context.Context, a storage.ArchivedInstance) error
}

// Archive ends a deprovisioning: it keeps a summary row of the instance,
// so that operators still see it and its ID is never reused, and deletes the
// instance with its operations, this deprovisioning included, in the same
// transaction. An instance is thus in instances or in the archive, never in
// both. The engine's save after this step finds the operation gone and stops;
// a poll of it is answered from the archive (succeeded), and the platform
// gets 404 for the instance and 410 for a DELETE. The step is idempotent:
// run again after a crash, it finds the archive row and no instance.
//
// A suspension archives nothing: the instance is not going away.
type Archive struct {
	Store interface {
		archiver
		provisioningReader
	}
}

// Done is what a deprovisioning says when it succeeded.
const Done = "Operation succeeded: the runtime is deprovisioned"

// description is what the deprovisioning says once the instance is
// archived: no later save of the operation happens (it went with the
// instance), so last_operation answers this from the archive.
func description(op *process.Operation) string {
	if len(op.Record.Leftovers) == 0 {
		return Done
	}
	return Done + "; " + process.DescribeLeftovers(op.Record.Leftovers)
}

// Name implements process.Step. The name is kept from the time this step
// only archived: it is persisted in operations' checkpoints.
func (s *Archive) Name() string { return "archive" }

// Run implements process.Step.
func (s *Archive) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Temporary {
		// A suspended instance must never get an archive row nor be removed:
		// a later provisioning resumes it.
		op.Describe("Not archiving the instance: it is suspended and stays")
		op.Conclude("Operation succeeded: the runtime is deprovisioned and the instance suspended")
		return process.Done()
	}
	op.Describe("Archiving and removing the instance")
	var leftovers json.RawMessage
	if len(op.Record.Leftovers) > 0 {
		raw, err := json.Marshal(op.Record.Leftovers)
		if err != nil {
			return process.StepResult{}, fmt.Errorf("encoding leftovers: %w", err)
		}
		leftovers = raw
	}
	i := op.Instance
	var provState storage.OperationState
	prov, err := s.Store.LastOperationOfType(ctx, op.InstanceID, storage.OperationTypeProvision)
	switch {
	case err == nil:
		provState = prov.State
	case !errors.Is(err, storage.ErrNotFound):
		return process.StepResult{}, err
	}
	err = s.Store.ArchiveAndRemove(ctx, storage.ArchivedInstance{
		InstanceID: i.InstanceID, RuntimeID: i.RuntimeID, GlobalAccountID: i.GlobalAccountID,
		SubAccountID: i.SubAccountID, PlanID: i.PlanID, PlanName: i.PlanName, PlatformRegion: i.PlatformRegion,
		Provider: i.Provider, ProviderRegion: i.ProviderRegion, ShootName: op.Instance.ShootName,
		ProvisioningState: provState, LastDeprovisioningID: op.ID,
		InstanceCreatedAt: i.CreatedAt, DeprovisioningStartedAt: op.CreatedAt,
		DeprovisioningDescription: description(op), Leftovers: leftovers,
	})
	if err != nil {
		return process.StepResult{}, err
	}
	return process.Done()
}
