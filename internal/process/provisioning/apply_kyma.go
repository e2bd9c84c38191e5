package provisioning

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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
	if _, err := ApplyKymaCR(ctx, s.KCP, DesiredKyma(op, params)); err != nil {
		return process.StepResult{}, err
	}
	return process.Done()
}

// DesiredKyma is the Kyma CR of an operation's runtime: the instance's plan
// and the modules and channel its parameters ask for.
func DesiredKyma(op *process.Operation, params catalog.ProvisioningParameters) *kyma.Kyma {
	return kyma.NewKyma(kyma.KymaInput{
		InstanceID:      op.InstanceID,
		RuntimeID:       op.Instance.RuntimeID,
		GlobalAccountID: op.Instance.GlobalAccountID,
		SubAccountID:    op.Instance.SubAccountID,
		PlanID:          op.Instance.PlanID,
		PlanName:        op.Instance.PlanName,
		Region:          op.Record.Region,
		PlatformRegion:  op.Instance.PlatformRegion,
		Channel:         modulesChannel(params.Modules),
		Modules:         modulesParam(params.Modules),
	})
}

// ApplyKymaCR makes the control plane's Kyma CR carry want's labels and
// spec, creating it if missing; it writes nothing when they are already
// there, and says which it did.
func ApplyKymaCR(ctx context.Context, kcp client.Client, want *kyma.Kyma) (controllerutil.OperationResult, error) {
	k := &kyma.Kyma{}
	k.Name, k.Namespace = want.Name, want.Namespace
	res, err := kube.CreateOrUpdate(ctx, kcp, k, func() error {
		k.Labels = mergeLabels(k.Labels, want.Labels)
		k.Spec = want.Spec
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("applying Kyma CR %s/%s: %w", want.Namespace, want.Name, err)
	}
	return res, nil
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
