package provisioning

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
)

// Overrides resolves the labelled override ConfigMaps and Secrets for the
// runtime into a control-plane Secret, so that secret-sourced values never
// land in the database; the Secret also carries the runtime's Kyma version
// and components, for installers.
type Overrides struct {
	Catalog *catalog.Catalog
	KCP     client.Client
	// Sources reads the override ConfigMaps and Secrets (an
	// overrides.Sources); nil reads them with KCP.
	Sources client.Reader
	Config  Config
}

// Name implements process.Step.
func (s *Overrides) Name() string { return "overrides" }

// SharesCheckpoint implements process.SharedCheckpoint: the Secret's name
// derives from the runtime ID, and a re-run rewrites it.
func (s *Overrides) SharesCheckpoint(*process.Operation) bool { return true }

// Run implements process.Step.
func (s *Overrides) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Resolving configuration overrides")
	plan, _ := s.Catalog.PlanByID(op.Instance.PlanID)
	sources := s.Sources
	if sources == nil {
		sources = s.KCP
	}
	d := op.Record
	name, err := overrides.ForRuntime(ctx, s.KCP, sources, s.Config.Namespace, plan.Lite, op.Instance.RuntimeID, op.InstanceID,
		overrides.Kyma{Version: d.KymaVersion, Components: d.Components}, true)
	if err != nil {
		return process.StepResult{}, err
	}
	op.Record.OverridesSecret = name
	return process.Done()
}
