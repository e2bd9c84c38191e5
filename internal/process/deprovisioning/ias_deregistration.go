package deprovisioning

import (
	"context"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/process"
)

// iasDeregistrar removes service providers from IAS (*ias.Client is one).
type iasDeregistrar interface {
	Company(ctx context.Context) (ias.Company, error)
	DeleteServiceProvider(ctx context.Context, spID string) error
}

// IASDeregistration removes the runtime's IAS service provider (found by
// its display name; none is fine), as upstream's IAS_Deregistration. It
// never fails a deprovisioning: IAS's trouble is retried for 5 minutes (a
// refusal not at all), then the step is skipped and the service provider
// listed as left behind, for the leftovers job to remove later. A
// suspension runs it too; the unsuspension registers the runtime again.
type IASDeregistration struct {
	IAS iasDeregistrar
}

// Name implements process.Step.
func (s *IASDeregistration) Name() string { return "ias_deregistration" }

// Remote implements process.RemoteStep.
func (s *IASDeregistration) Remote() string { return "IAS" }

// SkipAfter implements process.SkippableStep.
func (s *IASDeregistration) SkipAfter() time.Duration { return 5 * time.Minute }

// Leftover implements process.SkippableStep.
func (s *IASDeregistration) Leftover(op *process.Operation) string {
	return "the IAS service provider " + ias.DisplayName(op.InstanceID)
}

// Run implements process.Step.
func (s *IASDeregistration) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Removing the runtime's service provider from IAS")
	if err := removeServiceProvider(ctx, s.IAS, op.InstanceID); err != nil {
		return iasFailure("removing the IAS service provider", err)
	}
	return process.Done()
}

// removeServiceProvider deletes instanceID's service provider, found by
// its display name; none is fine. The leftovers job retries it for a
// skipped deregistration.
func removeServiceProvider(ctx context.Context, c iasDeregistrar, instanceID string) error {
	co, err := c.Company(ctx)
	if err != nil {
		return err
	}
	sp, ok := co.ServiceProvider(ias.DisplayName(instanceID))
	if !ok {
		return nil
	}
	return c.DeleteServiceProvider(ctx, sp.ID)
}

// iasFailure retries what may heal, and skips the step at once on a
// refusal.
func iasFailure(doing string, err error) (process.StepResult, error) {
	if ias.Temporary(err) {
		return process.StepResult{}, fmt.Errorf("%s: %w", doing, err)
	}
	return process.Fail("IAS refused %s: %v", doing, err)
}
