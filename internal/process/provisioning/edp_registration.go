package provisioning

import (
	"context"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/process"
)

// edpRegistrar registers data tenants in EDP (*edp.Client is one).
type edpRegistrar interface {
	CreateDataTenant(ctx context.Context, name string) error
	CreateMetadata(ctx context.Context, name string, item edp.MetadataItem) error
	DeleteMetadata(ctx context.Context, name, key string) error
	DeleteDataTenant(ctx context.Context, name string) error
}

// edpRetries is how long EDP's errors are retried: upstream's 30 minutes.
const edpRetries = 30 * time.Minute

// EDPRegistration registers the runtime's subaccount in EDP as a data
// tenant with its four metadata entries, before the cluster is requested,
// as upstream's EDP_Registration. It is in the pipeline only when
// APP_EDP_ADMIN_URL is set (and APP_EDP_DISABLED is not).
//
// Done registrations are recorded (Record.EDP) and not redone. What exists
// already (409: another instance of the subaccount registered it, or a run
// that crashed before its record was saved) is removed and created afresh,
// as upstream did. With APP_EDP_REQUIRED an EDP that does not answer is
// retried for 30 minutes and then fails the provisioning, and a refusal
// fails it at once; otherwise the step is skipped in either case, with a
// recorded warning (OptionalEDPRegistration).
type EDPRegistration struct {
	EDP         edpRegistrar
	Environment string
}

// Name implements process.Step.
func (s *EDPRegistration) Name() string { return "edp_registration" }

// Timeout implements process.TimedStep.
func (s *EDPRegistration) Timeout() time.Duration { return edpRetries }

// Remote implements process.RemoteStep.
func (s *EDPRegistration) Remote() string { return "EDP" }

// Run implements process.Step.
func (s *EDPRegistration) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if op.Instance.PlanName == "own_cluster" || op.Record.EDP != nil && op.Record.EDP.Created {
		return process.Done()
	}
	name := edp.TenantName(op.Instance.SubAccountID)
	op.Describe("Registering subaccount %s in EDP", name)
	err := s.EDP.CreateDataTenant(ctx, name)
	for _, item := range edp.Metadata(op.Instance.SubAccountID, op.Instance.PlatformRegion, op.Instance.PlanName) {
		if err != nil {
			break
		}
		err = s.EDP.CreateMetadata(ctx, name, item)
	}
	if edp.Conflict(err) {
		// Created before: remove it all and create it again, with this
		// runtime's values.
		if err := deregister(ctx, s.EDP, name); err != nil {
			return edpFailure("removing the existing EDP data tenant", err)
		}
		op.Describe("Registering subaccount %s in EDP again: it was registered before", name)
		return process.RetryAfter(time.Second)
	}
	if err != nil {
		return edpFailure("registering the subaccount in EDP", err)
	}
	op.Record.EDP = &edp.Record{Tenant: name, Environment: s.Environment, Created: true}
	return process.Done()
}

// deregister removes a data tenant's metadata and then the tenant.
func deregister(ctx context.Context, c edpRegistrar, name string) error {
	for _, key := range edp.Keys {
		if err := c.DeleteMetadata(ctx, name, key); err != nil {
			return err
		}
	}
	return c.DeleteDataTenant(ctx, name)
}

// edpFailure retries what may heal and fails the step otherwise (which
// skips an optional one).
func edpFailure(doing string, err error) (process.StepResult, error) {
	if edp.Temporary(err) {
		return process.StepResult{}, fmt.Errorf("%s: %w", doing, err)
	}
	return process.Fail("EDP refused %s: %v", doing, err)
}

// OptionalEDPRegistration is EDPRegistration without APP_EDP_REQUIRED: EDP's
// trouble never fails the provisioning; after the retries, or at once on a
// refusal, the step is skipped and the operation says what is missing.
type OptionalEDPRegistration struct{ EDPRegistration }

// SkipAfter implements process.SkippableStep.
func (s *OptionalEDPRegistration) SkipAfter() time.Duration { return edpRetries }

// Leftover implements process.SkippableStep.
func (s *OptionalEDPRegistration) Leftover(op *process.Operation) string {
	return "subaccount " + edp.TenantName(op.Instance.SubAccountID) + " not registered in EDP (metering)"
}
