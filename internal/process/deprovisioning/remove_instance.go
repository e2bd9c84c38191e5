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

// RemoveInstance is the last step. The archive step removes the instance
// itself now (storage.Store.ArchiveAndRemove), so for a deprovisioning that
// ran it, this step never runs: its operation is gone with the instance.
// It stays for deprovisionings whose archive step was checkpointed by an
// older version, which only archived: for them it deletes the instance and
// its operations; the archive row stays. It is idempotent: an instance
// already gone (removed by ArchiveAndRemove, or by migration 00006) is done.
// A suspension keeps the instance: storage marks it suspended when the
// operation succeeds, and a later provisioning resumes it.
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
	// Storage answers nil for an instance that is already gone.
	if err := s.Store.RemoveInstance(ctx, op.InstanceID); err != nil {
		return process.StepResult{}, fmt.Errorf("removing the deprovisioned instance: %w", err)
	}
	return process.Done()
}
