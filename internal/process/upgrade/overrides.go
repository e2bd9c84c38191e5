package upgrade

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
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
	op.Describe("Refreshing configuration overrides%s", dryRunNote(op.Data.Upgrade))
	plan, _ := s.Catalog.PlanByID(op.Instance.PlanID)
	ov, err := overrides.Resolve(ctx, s.KCP, s.Config.Namespace, plan.Lite)
	if err != nil {
		return process.StepResult{}, fmt.Errorf("resolving overrides: %w", err)
	}
	name := overrides.SecretName(op.Data.RuntimeID)
	op.Data.OverridesSecret = name
	if op.Data.Upgrade.DryRun {
		return process.Done()
	}
	labels := map[string]string{controlplane.LabelRuntimeID: op.Data.RuntimeID, "kyma-project.io/instance-id": op.InstanceID}
	if err := overrides.Store(ctx, s.KCP, s.Config.Namespace, name, labels, ov); err != nil {
		return process.StepResult{}, fmt.Errorf("storing overrides: %w", err)
	}
	return process.Done()
}
