package kyma

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Namespace is the control-plane namespace of the Kyma CRs (and of the kyma-versions ConfigMap).
const Namespace = "kcp-system"

// Release channels of spec.channel; ChannelRegular is used when the request names none.
const (
	ChannelRegular = "regular"
	ChannelFast    = "fast"
)

// Label keys of the Kyma CR (contracts.md). Lifecycle Manager and operators select runtimes by
// them, so the keys are part of the wire contract: never rename one.
const (
	LabelInstanceID      = "kyma-project.io/instance-id"
	LabelRuntimeID       = "kyma-project.io/runtime-id"
	LabelGlobalAccountID = "kyma-project.io/global-account-id"
	LabelSubAccountID    = "kyma-project.io/subaccount-id"
	LabelPlanID          = "kyma-project.io/broker-plan-id"
	LabelPlanName        = "kyma-project.io/broker-plan-name"
	LabelRegion          = "kyma-project.io/region"
	LabelPlatformRegion  = "kyma-project.io/platform-region"
	LabelKymaName        = "operator.kyma-project.io/kyma-name"
	// LabelManagedBy must be ManagedByLifecycleManager: Lifecycle Manager's cache only sees
	// resources carrying it.
	LabelManagedBy            = "operator.kyma-project.io/managed-by"
	ManagedByLifecycleManager = "lifecycle-manager"
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
			Namespace: Namespace,
			Labels: map[string]string{
				LabelInstanceID:      in.InstanceID,
				LabelRuntimeID:       in.RuntimeID,
				LabelGlobalAccountID: in.GlobalAccountID,
				LabelSubAccountID:    in.SubAccountID,
				LabelPlanID:          in.PlanID,
				LabelPlanName:        in.PlanName,
				LabelRegion:          in.Region,
				LabelPlatformRegion:  in.PlatformRegion,
				LabelKymaName:        name,
				LabelManagedBy:       ManagedByLifecycleManager,
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
		return ChannelRegular
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
