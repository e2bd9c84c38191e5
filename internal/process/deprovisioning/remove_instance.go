package deprovisioning

import (
	"context"
	"fmt"

	"github.com/kyma-keb/keb/internal/process"
)

// instanceRemover deletes an archived instance with its operations.
type instanceRemover interface {
	RemoveInstance(ctx context.Context, instanceID string) error
}

// RemoveInstance is the last step: the instance and its operations go; the
// archive row stays. Afterwards the platform gets 404 for the instance and
// 410 for a DELETE or a poll of this deprovisioning. A suspension keeps the
// instance: storage marks it suspended when the operation succeeds, and a
// later provisioning resumes it.
type RemoveInstance struct {
	Store instanceRemover
}

// Name implements process.Step.
func (s *RemoveInstance) Name() string { return "remove_instance" }

// Run implements process.Step.
func (s *RemoveInstance) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Temporary {
		op.Describe("Keeping the instance: it is suspended and can be resumed")
		op.Conclude("Operation succeeded: the runtime is deprovisioned and the instance suspended")
		return process.Done()
	}
	op.Describe("Removing the instance")
	if err := s.Store.RemoveInstance(ctx, op.InstanceID); err != nil {
		return process.StepResult{}, fmt.Errorf("removing the deprovisioned instance: %w", err)
	}
	return process.Done()
}
