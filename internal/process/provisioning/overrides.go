package provisioning

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
)

// Overrides resolves the labelled override ConfigMaps and Secrets for the
// runtime into a control-plane Secret the Runtime CR references, so that
// secret-sourced values never land in the database.
type Overrides struct {
	Catalog *catalog.Catalog
	KCP     client.Client
	Config  Config
}

// Name implements process.Step.
func (s *Overrides) Name() string { return "overrides" }

// Run implements process.Step.
func (s *Overrides) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Resolving configuration overrides")
	plan, _ := s.Catalog.PlanByID(op.Instance.PlanID)
	ov, err := overrides.Resolve(ctx, s.KCP, s.Config.Namespace, plan.Lite)
	if err != nil {
		return process.StepResult{}, fmt.Errorf("resolving overrides: %w", err)
	}
	name := overrides.SecretName(op.Data.RuntimeID)
	labels := map[string]string{controlplane.LabelRuntimeID: op.Data.RuntimeID, controlplane.LabelInstanceID: op.InstanceID}
	if err := overrides.Store(ctx, s.KCP, s.Config.Namespace, name, labels, ov); err != nil {
		return process.StepResult{}, fmt.Errorf("storing overrides: %w", err)
	}
	op.Data.OverridesSecret = name
	return process.Done()
}
