package kyma

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/controlplane"
)

// KymaInput is what NewKyma needs to know about the instance.
type KymaInput struct {
	InstanceID, RuntimeID, GlobalAccountID, SubAccountID, PlanID, PlanName, PlatformRegion string
	// Region is the hyperscaler region of the runtime's cluster (also for trials, whose
	// request names a trial region such as "europe").
	Region string
	// ShootName is the runtime's Gardener shoot: with Settings.ShootDomain it makes the
	// runtime's domain.
	ShootName string
	// Provider is the runtime's hyperscaler by upstream KEB's name (AWS, Azure, GCP,
	// SapConvergedCloud, ...: catalog.UpstreamProviderName), the kyma-project.io/provider label
	// upstream puts on the Kyma CR as on the Runtime CR; "" writes no such label.
	Provider string
	// Channel is the default spec.channel (for example from configuration); "" means regular.
	Channel string
	// Modules is the provisioning parameter `modules`; nil means it was absent.
	Modules *ModulesParam
}

// Settings are an installation's choices for the Kyma CRs keb writes.
type Settings struct {
	// ShootDomain is the domain runtimes' shoots live under (APP_SHOOT_DOMAIN): a runtime's
	// domain is <shoot>.<ShootDomain>, its skr-domain annotation.
	ShootDomain string
	// Internal and Beta are the runtimes labelled to see Lifecycle Manager's internal and beta
	// modules.
	Internal, Beta Audience
}

// Audience selects runtimes by plan name or global account ID.
type Audience struct {
	Plans, GlobalAccounts []string
}

// Includes reports whether a runtime of plan in globalAccount belongs to the audience.
func (a Audience) Includes(plan, globalAccount string) bool {
	return slices.Contains(a.Plans, plan) || slices.Contains(a.GlobalAccounts, globalAccount)
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

// Domain is a runtime's domain, <shoot>.<shootDomain>: the Kyma CR's skr-domain annotation, and
// the host its dashboard is served under (console.<domain>).
func Domain(shootName, shootDomain string) string { return shootName + "." + shootDomain }

// NewKyma returns the Kyma CR for an instance: kcp-system/<lower-case runtime ID>, with the
// contract's labels, the skr-domain annotation, spec.channel and spec.modules resolved from the
// `modules` parameter. It holds only what keb writes (see Apply).
func NewKyma(in KymaInput, s Settings) *Kyma {
	return &Kyma{
		TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        Name(in.RuntimeID),
			Namespace:   controlplane.Namespace,
			Labels:      Labels(in, s),
			Annotations: map[string]string{controlplane.AnnotationSKRDomain: Domain(in.ShootName, s.ShootDomain)},
		},
		Spec: KymaSpec{
			Channel: channel(in),
			Modules: Modules(in.Modules),
		},
	}
}

// Labels are the labels keb sets on the Kyma CR of the runtime in: the contract's, and
// LabelInternal and LabelBeta "true" for the runtimes the settings open those modules to (never
// "false": Lifecycle Manager reads a missing label as false, and whoever else labels a runtime
// beta keeps that label).
func Labels(in KymaInput, s Settings) map[string]string {
	l := map[string]string{
		controlplane.LabelInstanceID:      in.InstanceID,
		controlplane.LabelRuntimeID:       in.RuntimeID,
		controlplane.LabelGlobalAccountID: in.GlobalAccountID,
		controlplane.LabelSubAccountID:    in.SubAccountID,
		controlplane.LabelPlanID:          in.PlanID,
		controlplane.LabelPlanName:        in.PlanName,
		controlplane.LabelRegion:          in.Region,
		controlplane.LabelPlatformRegion:  in.PlatformRegion,
		controlplane.LabelKymaName:        Name(in.RuntimeID),
		controlplane.LabelManagedBy:       controlplane.ManagedByLifecycleManager,
	}
	// Not in the contract's list, but upstream KEB sets both on the Kyma CR too, and tools
	// written against it select Kyma CRs by them.
	if in.ShootName != "" {
		l[controlplane.LabelShootName] = in.ShootName
	}
	if in.Provider != "" {
		l[controlplane.LabelProvider] = in.Provider
	}
	if s.Internal.Includes(in.PlanName, in.GlobalAccountID) {
		l[controlplane.LabelInternal] = "true"
	}
	if s.Beta.Includes(in.PlanName, in.GlobalAccountID) {
		l[controlplane.LabelBeta] = "true"
	}
	return l
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

// Modules resolves spec.modules from the `modules` parameter. A listed module list wins over
// Default, as the catalog's schema never lets both through.
func Modules(p *ModulesParam) []Module {
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

// HasModule reports whether modules lists the module name.
func HasModule(modules []Module, name string) bool {
	return slices.ContainsFunc(modules, func(m Module) bool { return m.Name == name })
}

// copyModules deep-copies so that the returned CR never aliases the caller's or the package's slices.
func copyModules(in []Module) []Module {
	out := make([]Module, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
