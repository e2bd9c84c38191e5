package provisioning

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/kube"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// ApplyKyma creates the Kyma CR that Lifecycle Manager installs the modules from.
type ApplyKyma struct {
	KCP     client.Client
	Catalog *catalog.Catalog
	Config  Config
}

// Name implements process.Step.
func (s *ApplyKyma) Name() string { return "apply_kyma" }

// Run implements process.Step.
func (s *ApplyKyma) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Installing Kyma: creating the Kyma resource")
	params, err := Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	want := kyma.NewKyma(kyma.KymaInput{
		InstanceID:      op.InstanceID,
		RuntimeID:       op.Record.RuntimeID,
		GlobalAccountID: op.Instance.GlobalAccountID,
		SubAccountID:    op.Instance.SubAccountID,
		PlanID:          op.Instance.PlanID,
		PlanName:        op.Instance.PlanName,
		Region:          op.Record.Region,
		PlatformRegion:  op.Instance.PlatformRegion,
		Channel:         modulesChannel(params.Modules),
		Modules:         modulesParam(params.Modules),
	})
	k := &kyma.Kyma{}
	k.Name, k.Namespace = want.Name, want.Namespace
	if _, err := kube.CreateOrUpdate(ctx, s.KCP, k, func() error {
		k.Labels = mergeLabels(k.Labels, want.Labels)
		k.Spec = want.Spec
		return nil
	}); err != nil {
		return process.StepResult{}, fmt.Errorf("creating Kyma CR: %w", err)
	}
	return process.Done()
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
