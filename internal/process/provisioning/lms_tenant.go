package provisioning

import (
	"context"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/process"
)

// lmsTenantCreator creates LMS tenants (*lms.Client is one).
type lmsTenantCreator interface {
	CreateTenant(ctx context.Context, t lms.Tenant) (string, error)
}

// lmsTenantStore finds a global account's recorded tenant, or creates and
// records it, one provisioning at a time (*storage.Store is one).
type lmsTenantStore interface {
	EnsureLMSTenant(ctx context.Context, name, region string, create func(ctx context.Context) (string, error)) (string, bool, error)
	ForgetLMSTenant(ctx context.Context, name, region, id string) error
}

// LMS's retry bounds, upstream's: LMS not answering is retried for 30
// minutes (then the provisioning fails, whatever APP_LMS_MANDATORY says);
// LMS refusing is asked again every 30 seconds for 3 minutes (then LMS has
// failed: see lmsFailed).
const (
	lmsRetries       = 30 * time.Minute
	lmsRefusalWindow = 3 * time.Minute
	lmsRefusalPoll   = 30 * time.Second
)

// LMSTenant gets the runtime's global account an LMS tenant in the LMS
// region of the runtime's region, as upstream's Create_LMS_Tenant: the
// tenant recorded for the account and region (lms_tenants) is reused,
// otherwise one is created and recorded, under a lock, so that a re-run or
// another replica never creates a second (storage.EnsureLMSTenant). The
// tenant's ID is kept in the operation (Record.LMS). It is in the pipeline
// only when APP_LMS_URL is set; it does nothing for trial runtimes and for
// global accounts APP_LMS_ENABLED_FOR_GLOBAL_ACCOUNTS leaves out.
type LMSTenant struct {
	LMS     lmsTenantCreator
	Tenants lmsTenantStore
	Config  lms.Config
}

// Name implements process.Step.
func (s *LMSTenant) Name() string { return "lms_tenant" }

// Timeout implements process.TimedStep.
func (s *LMSTenant) Timeout() time.Duration { return lmsRetries }

// Remote implements process.RemoteStep.
func (s *LMSTenant) Remote() string { return "LMS" }

// Run implements process.Step.
func (s *LMSTenant) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	i := op.Instance
	if !s.Config.For(i.GlobalAccountID, i.PlanName) || op.Record.LMS != nil && op.Record.LMS.TenantID != "" {
		return process.Done()
	}
	params, err := Parameters(op)
	if err != nil {
		return process.StepResult{}, err
	}
	region := ""
	if params.Region != nil {
		region = *params.Region
	}
	rec := op.Record.LMS
	if rec == nil {
		now := op.Now()
		rec = &lms.Record{RequestedAt: &now}
		op.Record.LMS = rec
	}
	rec.Name, rec.Region = lms.TenantName(i.GlobalAccountID), s.Config.RegionOf(region)
	op.Describe("Creating the LMS tenant of global account %s in %s", rec.Name, rec.Region)
	id, created, err := s.Tenants.EnsureLMSTenant(ctx, rec.Name, rec.Region, func(ctx context.Context) (string, error) {
		return s.LMS.CreateTenant(ctx, lms.NewTenant(s.Config, rec.Name, rec.Region))
	})
	if err != nil {
		return lmsFailure(op, "creating the LMS tenant", err)
	}
	rec.TenantID, rec.Reused, rec.RefusedSince = id, !created, nil
	return process.Done()
}

// lmsFailure retries LMS not answering (the engine fails the step after
// its Timeout), and asks again every 30 seconds while LMS refuses, for 3
// minutes; then LMS has failed.
func lmsFailure(op *process.Operation, doing string, err error) (process.StepResult, error) {
	if lms.Temporary(err) {
		return process.StepResult{}, fmt.Errorf("%s: %w", doing, err)
	}
	rec := op.Record.LMS
	now := op.Now()
	if rec.RefusedSince == nil {
		rec.RefusedSince = &now
	}
	if now.Sub(*rec.RefusedSince) < lmsRefusalWindow {
		op.Describe("LMS refused %s; asking again: %v", doing, err)
		return process.RetryAfter(lmsRefusalPoll)
	}
	return lmsFailed(op, fmt.Sprintf("LMS refused %s: %v", doing, err))
}

// lmsFailed ends LMS's part of the provisioning: with APP_LMS_MANDATORY
// it fails the provisioning; otherwise it marks LMS failed (the
// certificates are not requested) and fails the step, which the optional
// steps skip with a recorded warning.
func lmsFailed(op *process.Operation, msg string) (process.StepResult, error) {
	op.Record.LMS.Failed = true
	return process.Fail("%s", msg)
}

// OptionalLMSTenant is LMSTenant without APP_LMS_MANDATORY: LMS refusing
// (for 3 minutes) skips the step, with a recorded warning, and the
// certificates are not requested; LMS not answering for 30 minutes still
// fails the provisioning, as upstream's did.
type OptionalLMSTenant struct{ LMSTenant }

// SkipAfter implements process.SkippableStep: the step gives up itself
// (a failure); no wait or error of it lasts past its Timeout, which fails
// the step first.
func (s *OptionalLMSTenant) SkipAfter() time.Duration { return lmsRetries + time.Minute }

// Leftover implements process.SkippableStep.
func (s *OptionalLMSTenant) Leftover(op *process.Operation) string {
	return "no LMS tenant for global account " + lms.TenantName(op.Instance.GlobalAccountID) + " (logs not forwarded)"
}
