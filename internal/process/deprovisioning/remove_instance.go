package deprovisioning

import (
	"context"

	"github.com/kyma-keb/keb/internal/process"
)

// instanceRemover deletes an archived instance with its operations.
type instanceRemover interface {
	RemoveInstance(ctx context.Context, instanceID string) error
}

// RemoveInstance is the last step: the instance and its operations go; the
// archive row stays. Afterwards the platform gets 404 for the instance and
// 410 for a DELETE or a poll of this deprovisioning.
type RemoveInstance struct {
	Store instanceRemover
}

// Name implements process.Step.
func (s *RemoveInstance) Name() string { return "remove_instance" }

// Run implements process.Step.
func (s *RemoveInstance) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Removing the instance")
	return process.StepResult{}, s.Store.RemoveInstance(ctx, op.InstanceID)
}
