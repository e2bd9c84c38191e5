package deprovisioning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// provisioningReader finds what the instance's provisioning recorded.
type provisioningReader interface {
	LastOperationOfType(ctx context.Context, instanceID string, opType storage.OperationType) (storage.Operation, error)
}

// Initialization gathers what the provisioning created (it may have been
// halted part way), so the later steps know what to remove.
type Initialization struct {
	Store provisioningReader
}

// Name implements process.Step.
func (s *Initialization) Name() string { return "initialization" }

// Run implements process.Step.
func (s *Initialization) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Preparing to deprovision the runtime")
	prov, err := s.Store.LastOperationOfType(ctx, op.InstanceID, storage.OperationTypeProvision)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return process.StepResult{}, fmt.Errorf("reading provisioning: %w", err)
	}
	if err == nil && len(prov.Data) > 0 {
		var pd process.Record
		if err := json.Unmarshal(prov.Data, &pd); err != nil {
			return process.StepResult{}, fmt.Errorf("decoding provisioning data: %w", err)
		}
		op.Record.Provider, op.Record.Region = pd.Provider, pd.Region
		op.Record.HyperscalerType, op.Record.HyperscalerSecret, op.Record.HyperscalerShared = pd.HyperscalerType, pd.HyperscalerSecret, pd.HyperscalerShared
		op.Record.HyperscalerEUAccess = pd.HyperscalerEUAccess
		op.Record.OverridesSecret = pd.OverridesSecret
		// What the provisioning created elsewhere, for the steps that
		// remove it; a re-run keeps what this deprovisioning already
		// removed.
		if op.Record.AVS == nil {
			op.Record.AVS = pd.AVS
		}
	}
	// Later steps read the runtime's identity from the instance (see
	// process.Operation); the record keeps a copy for operators reading this
	// operation.
	op.Record.RuntimeID, op.Record.ShootName = op.Instance.RuntimeID, op.Instance.ShootName
	if op.Record.Provider == "" {
		op.Record.Provider = op.Instance.Provider
	}
	return process.Done()
}
