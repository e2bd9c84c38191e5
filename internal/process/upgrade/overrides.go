package upgrade

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
)

// Overrides refreshes the runtime's overrides Secret from the labelled
// override ConfigMaps and Secrets as they are now, so that the new Kyma
// version is installed with the current configuration. A dry run resolves
// them (so a broken override shows) without writing the Secret.
type Overrides struct {
	Catalog *catalog.Catalog
	KCP     client.Client
	Config  Config
}

// Name implements process.Step.
func (s *Overrides) Name() string { return "upgrade_overrides" }

// Run implements process.Step.
func (s *Overrides) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Refreshing configuration overrides%s", dryRunNote(op.Record.Upgrade))
	plan, _ := s.Catalog.PlanByID(op.Instance.PlanID)
	name, err := overrides.ForRuntime(ctx, s.KCP, s.KCP, s.Config.Namespace, plan.Lite, op.Instance.RuntimeID, op.InstanceID,
		!op.Record.Upgrade.DryRun)
	if err != nil {
		return process.StepResult{}, err
	}
	op.Record.OverridesSecret = name
	return process.Done()
}
