package kyma

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/controlplane"
)

// KymaInput is what NewKyma needs to know about the instance.
type KymaInput struct {
	InstanceID, RuntimeID, GlobalAccountID, SubAccountID, PlanID, PlanName, Region, PlatformRegion string
	// Channel is the default spec.channel (for example from configuration); "" means regular.
	Channel string
	// Modules is the provisioning parameter `modules`; nil means it was absent.
	Modules *ModulesParam
}

// ModulesParam mirrors the provisioning parameter `modules` without depending on the catalog:
// the caller converts. Nil or {Default: true} selects the default modules, {Default: false}
// none, a non-nil List exactly those (an empty List: none). Channel, when set, is spec.channel.
type ModulesParam struct {
	Default *bool
	Channel string
	List    []Module
}

// Name returns the Kyma CR's name for a runtime: the runtime ID in lower case, because Kubernetes
// names must be lower case while runtime IDs may not be.
func Name(runtimeID string) string { return strings.ToLower(runtimeID) }

// NewKyma returns the Kyma CR for an instance: kcp-system/<lower-case runtime ID>, with the
// contract's labels, spec.channel and spec.modules resolved from the `modules` parameter.
func NewKyma(in KymaInput) *Kyma {
	name := Name(in.RuntimeID)
	return &Kyma{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: controlplane.Namespace,
			Labels: map[string]string{
				controlplane.LabelInstanceID:      in.InstanceID,
				controlplane.LabelRuntimeID:       in.RuntimeID,
				controlplane.LabelGlobalAccountID: in.GlobalAccountID,
				controlplane.LabelSubAccountID:    in.SubAccountID,
				controlplane.LabelPlanID:          in.PlanID,
				controlplane.LabelPlanName:        in.PlanName,
				controlplane.LabelRegion:          in.Region,
				controlplane.LabelPlatformRegion:  in.PlatformRegion,
				controlplane.LabelKymaName:        name,
				controlplane.LabelManagedBy:       controlplane.ManagedByLifecycleManager,
			},
		},
		Spec: KymaSpec{
			Channel: channel(in),
			Modules: modules(in.Modules),
		},
	}
}

// channel picks spec.channel: the one given with the modules wins over the configured default.
func channel(in KymaInput) string {
	switch {
	case in.Modules != nil && in.Modules.Channel != "":
		return in.Modules.Channel
	case in.Channel != "":
		return in.Channel
	default:
		return controlplane.ChannelRegular
	}
}

// modules resolves spec.modules. A listed module list wins over Default, as the catalog's schema
// never lets both through.
func modules(p *ModulesParam) []Module {
	switch {
	case p == nil:
		return DefaultModules()
	case p.List != nil:
		return copyModules(p.List)
	case p.Default != nil && !*p.Default:
		return nil
	default:
		return DefaultModules()
	}
}

// copyModules deep-copies so that the returned CR never aliases the caller's or the package's slices.
func copyModules(in []Module) []Module {
	out := make([]Module, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
