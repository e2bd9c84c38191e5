package provisioning

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// ApplyKyma creates the Kyma CR that Lifecycle Manager installs the modules
// from (kyma.Apply: one server-side apply, which a re-run repeats without a
// change).
type ApplyKyma struct {
	KCP     client.Client
	Catalog *catalog.Catalog
	Config  Config
}

// Name implements process.Step.
func (s *ApplyKyma) Name() string { return "apply_kyma" }

// SharesCheckpoint implements process.SharedCheckpoint: a re-run converges
// the Kyma CR on the record.
func (s *ApplyKyma) SharesCheckpoint(*process.Operation) bool { return true }

// Run implements process.Step.
func (s *ApplyKyma) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Installing Kyma: creating the Kyma resource")
	params, err := Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	if err := kyma.Apply(ctx, s.KCP, kyma.NewKyma(KymaInput(op, params), s.Config.Kyma)); err != nil {
		return process.StepResult{}, err
	}
	return process.Done()
}

// KymaInput is what the Kyma CR of an operation's runtime is built from:
// the instance, its plan, the hyperscaler region its cluster runs in, and
// the modules and channel its parameters ask for.
func KymaInput(op *process.Operation, params catalog.ProvisioningParameters) kyma.KymaInput {
	return kyma.KymaInput{
		InstanceID:      op.InstanceID,
		RuntimeID:       op.Instance.RuntimeID,
		GlobalAccountID: op.Instance.GlobalAccountID,
		SubAccountID:    op.Instance.SubAccountID,
		PlanID:          op.Instance.PlanID,
		PlanName:        op.Instance.PlanName,
		Region:          op.Record.ProviderRegion,
		PlatformRegion:  op.Instance.PlatformRegion,
		ShootName:       op.Instance.ShootName,
		Provider:        upstreamProviderName(op.Record.Provider),
		Channel:         modulesChannel(params.Modules),
		Modules:         modulesParam(params.Modules),
	}
}

// upstreamProviderName is the provider label's value for a recorded
// provider type; "" (no label) for an operation that recorded none.
func upstreamProviderName(provider string) string {
	if provider == "" {
		return ""
	}
	return catalog.UpstreamProviderName(provider)
}

// RuntimeModules are the runtime's spec.modules, as its parameters select
// them (they cannot change after provisioning).
func RuntimeModules(params catalog.ProvisioningParameters) []kyma.Module {
	return kyma.Modules(modulesParam(params.Modules))
}

func modulesChannel(m *catalog.Modules) string {
	if m == nil {
		return ""
	}
	return m.Channel
}

// modulesParam converts the validated parameter into kyma's input, which
// keeps kyma independent of the catalog.
func modulesParam(m *catalog.Modules) *kyma.ModulesParam {
	if m == nil {
		return nil
	}
	p := &kyma.ModulesParam{Default: m.Default, Channel: m.Channel}
	if m.List != nil {
		p.List = []kyma.Module{}
		for _, mod := range m.List {
			km := kyma.Module{Name: mod.Name, Channel: mod.Channel, CustomResourcePolicy: mod.CustomResourcePolicy}
			km.Managed = mod.Managed
			p.List = append(p.List, km)
		}
	}
	return p
}
