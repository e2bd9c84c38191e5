package deprovisioning

import (
	"context"
	"errors"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// archiver keeps a summary of a deprovisioned instance.
type archiver interface {
	Archive(ctx context.Context, a storage.ArchivedInstance) error
}

// Archive keeps a summary row of the instance after it is gone: operators
// still see it, and its ID is never reused. A suspension archives nothing:
// the instance is not going away.
type Archive struct {
	Store interface {
		archiver
		provisioningReader
	}
}

// Name implements process.Step.
func (s *Archive) Name() string { return "archive" }

// Run implements process.Step.
func (s *Archive) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Temporary {
		// An archive row is what lets remove_instance delete the instance
		// (storage refuses an unarchived one); a suspended instance must
		// never get one, or a later step or operator could remove it.
		op.Describe("Not archiving the instance: it is suspended and stays")
		return process.Done()
	}
	op.Describe("Archiving the instance")
	i := op.Instance
	provState := ""
	prov, err := s.Store.LastOperationOfType(ctx, op.InstanceID, storage.OperationTypeProvision)
	switch {
	case err == nil:
		provState = prov.State
	case !errors.Is(err, storage.ErrNotFound):
		return process.StepResult{}, err
	}
	err = s.Store.Archive(ctx, storage.ArchivedInstance{
		InstanceID: i.InstanceID, RuntimeID: i.RuntimeID, GlobalAccountID: i.GlobalAccountID,
		SubAccountID: i.SubAccountID, PlanID: i.PlanID, PlanName: i.PlanName, PlatformRegion: i.PlatformRegion,
		Provider: i.Provider, ProviderRegion: i.ProviderRegion, ShootName: op.Data.ShootName,
		ProvisioningState: provState, LastDeprovisioningID: op.ID,
		InstanceCreatedAt: i.CreatedAt, DeprovisioningStartedAt: op.CreatedAt,
	})
	if err != nil {
		return process.StepResult{}, err
	}
	return process.Done()
}
