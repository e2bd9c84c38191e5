package provisioning

import (
	"context"
	"time"

	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// iasTyper makes service providers OpenID Connect ones (*ias.Client is
// one).
type iasTyper interface {
	Company(ctx context.Context) (ias.Company, error)
	SetOIDC(ctx context.Context, spID, grafanaHost string) error
}

// IASType makes the runtime's IAS service provider an OpenID Connect one
// for its Grafana (https://grafana.<shoot>.<APP_SHOOT_DOMAIN>, redirect
// /login/generic_oauth) once the runtime is up, as upstream's IAS_Type. It
// never fails a provisioning: IAS not answering is retried for 10 minutes,
// then the step is skipped, as it is at once on a refusal, with a recorded
// warning (Grafana's single sign-on is then not wired).
type IASType struct {
	IAS         iasTyper
	ShootDomain string
}

// Name implements process.Step.
func (s *IASType) Name() string { return "ias_type" }

// Remote implements process.RemoteStep.
func (s *IASType) Remote() string { return "IAS" }

// SkipAfter implements process.SkippableStep.
func (s *IASType) SkipAfter() time.Duration { return 10 * time.Minute }

// Leftover implements process.SkippableStep.
func (s *IASType) Leftover(op *process.Operation) string {
	return "the IAS service provider " + ias.DisplayName(op.InstanceID) + " is no OpenID Connect provider (Grafana's single sign-on)"
}

// Run implements process.Step.
func (s *IASType) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Setting the IAS service provider's OpenID Connect type")
	co, err := s.IAS.Company(ctx)
	if err != nil {
		return iasFailure("reading the IAS service providers", err)
	}
	sp, ok := co.ServiceProvider(ias.DisplayName(op.InstanceID))
	if !ok {
		return process.Fail("IAS has no service provider %q", ias.DisplayName(op.InstanceID))
	}
	if err := s.IAS.SetOIDC(ctx, sp.ID, ias.GrafanaHost(kyma.Domain(op.Instance.ShootName, s.ShootDomain))); err != nil {
		return iasFailure("setting the service provider's OpenID Connect type", err)
	}
	return process.Done()
}
