package provisioning

import (
	"context"
	"time"

	"github.com/kyma-keb/keb/internal/director"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// consoleURLReader reads a runtime's console URL from the Director
// (*director.Client is one).
type consoleURLReader interface {
	ConsoleURL(ctx context.Context, globalAccountID, runtimeID string) (string, error)
}

// directorPoll is how often the step asks again while the Director has no
// answer yet: upstream's 3 minutes.
const directorPoll = 3 * time.Minute

// CheckDashboardURL confirms, once the cluster is ready, that the Director
// has the runtime registered in its global account with the dashboard URL
// keb hands out (https://console.<shoot>.<APP_SHOOT_DOMAIN>), as upstream's
// Check_Dashboard_URL. It is in the pipeline only when APP_DIRECTOR_URL is
// set. A Director that has no answer yet (no runtime, no status, no label,
// an error) is asked again every 3 minutes until the operation's deadline;
// a runtime the Director reports FAILED, a label that is no URL, or another
// URL fails the provisioning.
type CheckDashboardURL struct {
	Director    consoleURLReader
	ShootDomain string
}

// Name implements process.Step.
func (s *CheckDashboardURL) Name() string { return "check_dashboard_url" }

// Remote implements process.RemoteStep.
func (s *CheckDashboardURL) Remote() string { return "the Director" }

// Run implements process.Step.
func (s *CheckDashboardURL) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	want := "https://console." + kyma.Domain(op.Instance.ShootName, s.ShootDomain)
	got, err := s.Director.ConsoleURL(ctx, op.Instance.GlobalAccountID, op.Instance.RuntimeID)
	if err != nil && director.Temporary(err) {
		op.Describe("Waiting for the Director to register runtime %s with its dashboard URL", op.Instance.RuntimeID)
		return process.RetryAfter(directorPoll)
	}
	if err != nil {
		return process.Fail("%v", err)
	}
	if got != want {
		return process.Fail("the Director registered runtime %s with dashboard URL %s, not %s", op.Instance.RuntimeID, got, want)
	}
	return process.Done()
}
