package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// CreateRuntime asks the infrastructure manager for the cluster: a Runtime CR
// in the control plane, in the infrastructure manager's shape and nothing of
// keb's own (the Kyma version and components are keb's records).
type CreateRuntime struct {
	KCP     client.Client
	Catalog *catalog.Catalog
	Config  Config
}

// Name implements process.Step.
func (s *CreateRuntime) Name() string { return "create_runtime" }

// SharesCheckpoint implements process.SharedCheckpoint: a re-run converges
// the Runtime CR on the record.
func (s *CreateRuntime) SharesCheckpoint(*process.Operation) bool { return true }

// Run implements process.Step. A re-run (after a crash) finds the CR and
// patches the fields this step sets, which converges it on the record and
// keeps whatever else the infrastructure manager or an operator set.
func (s *CreateRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Requesting the cluster from the infrastructure manager")
	params, err := Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	// A CR already there (a re-run, or one an earlier keb version began)
	// keeps its zones: Gardener does not move a worker pool's zones, and
	// earlier versions named a region's first zones instead of choosing.
	existing := &im.Runtime{}
	err = s.KCP.Get(ctx, client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, existing)
	if err != nil && !apierrors.IsNotFound(err) {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	if i := existing.Spec.KymaWorker(); err == nil && i >= 0 && len(existing.Spec.Shoot.Provider.Workers[i].Zones) > 0 {
		op.Record.Zones = existing.Spec.Shoot.Provider.Workers[i].Zones
	}
	if len(op.Record.Zones) == 0 {
		op.Record.Zones = KymaZones(op, params, s.Catalog)
	}
	rt := desiredRuntime(op, params, s.Catalog, s.Config.Namespace, s.Config.Runtime, PoolZonesOf(existing))
	err = s.KCP.Create(ctx, rt, client.FieldOwner(im.FieldManager), client.FieldValidation("Strict"))
	if apierrors.IsAlreadyExists(err) {
		fields, ferr := RuntimeFields(rt)
		if ferr != nil {
			return process.StepResult{}, ferr
		}
		_, _, err = im.Patch(ctx, s.KCP, client.ObjectKeyFromObject(rt), fields)
	}
	if apierrors.IsInvalid(err) {
		// The infrastructure manager's CRD refuses the Runtime (a provider type it does not
		// know, such as gdch): no retry makes it valid, so the provisioning fails saying why.
		return process.Fail("the control plane refuses the Runtime CR (the infrastructure manager's CRD): %v", err)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("creating Runtime CR: %w", err)
	}
	return process.Done()
}

// DesiredRuntime is the Runtime CR of an operation's runtime, as
// create_runtime writes it when there is none yet.
func DesiredRuntime(op *process.Operation, params catalog.ProvisioningParameters, cat *catalog.Catalog, namespace string,
	rs RuntimeSettings) *im.Runtime {
	return desiredRuntime(op, params, cat, namespace, rs, nil)
}

// PoolZonesOf are the zones of each additional worker pool of rt, by pool
// name; nil for a Runtime CR without.
func PoolZonesOf(rt *im.Runtime) map[string][]string {
	if rt == nil || rt.Spec.Shoot.Provider.AdditionalWorkers == nil {
		return nil
	}
	zones := map[string][]string{}
	for _, w := range *rt.Spec.Shoot.Provider.AdditionalWorkers {
		zones[w.Name] = w.Zones
	}
	return zones
}

func desiredRuntime(op *process.Operation, params catalog.ProvisioningParameters, cat *catalog.Catalog, namespace string,
	rs RuntimeSettings, poolZones map[string][]string) *im.Runtime {
	d := op.Record
	plan, _ := cat.PlanByID(op.Instance.PlanID)
	nodes, pods, services := params.Networking.CIDRs()
	additionalOIDC := OIDCConfigs(params.OIDC, cat.DefaultOIDC())
	kymaWorker := KymaWorker(op, params, cat, plan, rs)
	rt := &im.Runtime{
		ObjectMeta: metav1.ObjectMeta{Name: kyma.Name(op.Instance.RuntimeID), Namespace: namespace, Labels: RuntimeLabels(op)},
		Spec: im.RuntimeSpec{
			Shoot: im.RuntimeShoot{
				Name:                op.Instance.ShootName,
				Purpose:             im.ShootPurpose(plan.Purpose),
				PlatformRegion:      op.Instance.PlatformRegion,
				Region:              d.ProviderRegion,
				SecretBindingName:   d.HyperscalerSecret,
				EnforceSeedLocation: params.ColocateControlPlane,
				Kubernetes: im.Kubernetes{Version: optional(rs.KubernetesVersion), KubeAPIServer: im.APIServer{
					AdditionalOIDCConfig: additionalOIDC, ACL: ACL(params.AccessControlList)}},
				ControlPlane: ControlPlane(plan, rs.ControlPlaneFailureTolerance),
				Provider: im.Provider{
					Type:              d.Provider,
					Workers:           []im.Worker{kymaWorker},
					AdditionalWorkers: AdditionalWorkers(op, params, cat, plan, rs, kymaWorker.Zones, poolZones),
				},
				Networking: im.Networking{Type: ptr(im.NetworkingCalico), Nodes: nodes, Pods: pods, Services: services},
			},
			Security: im.Security{
				Administrators: Administrators(op, params),
				Networking: im.NetworkingSecurity{Filter: im.Filter{
					Ingress: IngressFilter(params.IngressFiltering, External(op)), Egress: im.Egress{Enabled: !External(op)}}},
			},
		},
	}
	return rt
}

// KymaWorker is the runtime's Kyma worker pool as the record resolved it:
// machine type and image, autoscaler bounds, zones (KymaZones), disk (volumeSizeGb,
// else the plan's, plus additionalVolumeSizeGi), and a roll-out that adds a
// machine per zone and takes none away unless maxSurge and maxUnavailable
// say otherwise.
func KymaWorker(op *process.Operation, params catalog.ProvisioningParameters, cat *catalog.Catalog, plan catalog.Plan,
	rs RuntimeSettings) im.Worker {
	d := op.Record
	zones := KymaZones(op, params, cat)
	surge, unavailable := len(zones), 0
	if params.MaxSurge != nil {
		surge = *params.MaxSurge
	}
	if params.MaxUnavailable != nil {
		unavailable = *params.MaxUnavailable
	}
	volume := plan.VolumeSizeGb
	if params.VolumeSizeGb != nil {
		volume = *params.VolumeSizeGb
	}
	w := im.Worker{
		Name:           im.KymaWorkerName,
		Machine:        im.Machine{Type: cat.ConcreteMachineType(d.Provider, d.MachineType), Image: machineImage(cat, d.Provider, rs)},
		Minimum:        int32(d.AutoScalerMin),
		Maximum:        int32(d.AutoScalerMax),
		MaxSurge:       ptr(intstr.FromInt32(int32(surge))),
		MaxUnavailable: ptr(intstr.FromInt32(int32(unavailable))),
		Zones:          zones,
		Volume: &im.Volume{VolumeSize: fmt.Sprintf("%dGi", volume+deref(params.AdditionalVolumeSizeGi)),
			Type: optional(cat.VolumeType(plan, d.Provider))},
		CRI:        CRI(params.GVisor),
		Kubernetes: Kubelet(op, rs),
	}
	return w
}

// Kubelet is a worker pool's kubelet configuration: the maxPods setting for
// the global accounts allowed more pods per node (as upstream KEB's
// allow-list), nil for every other.
func Kubelet(op *process.Operation, rs RuntimeSettings) *im.WorkerKubernetes {
	if rs.MaxPods <= 0 || !(slices.Contains(rs.MaxPodsGlobalAccounts, "*") || slices.Contains(rs.MaxPodsGlobalAccounts, op.Instance.GlobalAccountID)) {
		return nil
	}
	return &im.WorkerKubernetes{Kubelet: &im.Kubelet{MaxPods: ptr(int32(rs.MaxPods))}}
}

// ControlPlane is the shoot's control plane for the failure tolerance
// setting (node or zone): written on the paid plans upstream KEB writes it
// on (aws, azure, gcp, sap-converged-cloud and their build-runtime and
// preview plans), never on azure_lite, trial and free; nil when the setting
// is "".
func ControlPlane(plan catalog.Plan, tolerance string) *im.ControlPlane {
	if tolerance == "" || plan.Lite || plan.Trial || plan.ByPlatformRegion() {
		return nil
	}
	return &im.ControlPlane{HighAvailability: &im.HighAvailability{FailureTolerance: im.FailureTolerance{Type: tolerance}}}
}

// CRI is a worker's container runtime for the gvisor parameter: containerd
// with gVisor beside it; nil (Gardener's default) without gVisor.
func CRI(g *catalog.GVisor) *im.CRI {
	if !g.On() {
		return nil
	}
	return &im.CRI{Name: im.CRIContainerd, ContainerRuntimes: []im.ContainerRuntime{{Type: im.RuntimeGVisor}}}
}

// AdditionalWorkers are the additionalWorkerNodePools parameter's pools as
// worker pools: zones from the Kyma pool's (kymaZones; catalog.PoolZones),
// except that a pool named in current keeps the zones it has there (Gardener
// does not move a pool's zones), a roll-out of a machine per zone, the plan's
// disk plus the pool's additional size, and the pool's labels, annotations
// and taints. nil when the parameter is absent; an empty list when it lists
// none.
func AdditionalWorkers(op *process.Operation, params catalog.ProvisioningParameters, cat *catalog.Catalog, plan catalog.Plan,
	rs RuntimeSettings, kymaZones []string, current map[string][]string) *[]im.Worker {
	if params.AdditionalWorkerNodePools == nil {
		return nil
	}
	d := op.Record
	workers := []im.Worker{}
	for _, p := range *params.AdditionalWorkerNodePools {
		zones, ok := current[p.Name]
		if !ok || len(zones) == 0 {
			zones = cat.PoolZones(plan, p, kymaZones)
		}
		w := im.Worker{
			Name:           p.Name,
			Machine:        im.Machine{Type: cat.ConcreteMachineType(d.Provider, p.MachineType), Image: machineImage(cat, d.Provider, rs)},
			Minimum:        int32(valueOr(p.AutoScalerMin, plan.DefaultAutoScalerMin)),
			Maximum:        int32(valueOr(p.AutoScalerMax, plan.DefaultAutoScalerMax)),
			MaxSurge:       ptr(intstr.FromInt32(int32(len(zones)))),
			MaxUnavailable: ptr(intstr.FromInt32(0)),
			Zones:          zones,
			Volume: &im.Volume{VolumeSize: fmt.Sprintf("%dGi", plan.VolumeSizeGb+deref(p.AdditionalVolumeSizeGi)),
				Type: optional(cat.VolumeType(plan, d.Provider))},
			Labels:      p.Labels,
			Annotations: p.Annotations,
			CRI:         CRI(p.GVisor),
			Kubernetes:  Kubelet(op, rs),
		}
		for _, t := range p.Taints {
			w.Taints = append(w.Taints, im.Taint{Key: t.Key, Value: t.Value, Effect: im.TaintEffect(t.Effect)})
		}
		workers = append(workers, w)
	}
	return &workers
}

// machineImage is the worker nodes' OS image: the one the plans file
// configures for the provider, else the machine image settings, written
// even when they are empty as upstream KEB writes its (the infrastructure
// manager then leaves Gardener's default).
func machineImage(cat *catalog.Catalog, provider string, rs RuntimeSettings) *im.ShootMachineImage {
	name, version, ok := cat.MachineImage(provider)
	if !ok {
		return &im.ShootMachineImage{Name: rs.MachineImage, Version: ptr(rs.MachineImageVersion)}
	}
	img := &im.ShootMachineImage{Name: name}
	if version != "" {
		img.Version = &version
	}
	return img
}

// optional is s, nil when empty: a field written only with a value.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ACL is the API server's access control list of the accessControlList
// parameter; nil when absent or when it allows every network ([]).
func ACL(p *catalog.AccessControlList) *im.ACL {
	if p == nil || len(p.AllowedCIDRs) == 0 {
		return nil
	}
	return &im.ACL{AllowedCIDRs: append([]string(nil), p.AllowedCIDRs...)}
}

// IngressFilter is the ingress filter as upstream KEB always writes it:
// the ingressFiltering parameter, false when absent or for an external
// instance (the catalog refuses the parameter where the plan lacks it).
func IngressFilter(on *bool, external bool) *im.Ingress {
	return &im.Ingress{Enabled: on != nil && *on && !external}
}

func valueOr(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

func deref(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

// RuntimeFields is the part of rt that keb sets, for im.Patch: its labels
// and spec, without the fields of rt's Go type that are empty.
func RuntimeFields(rt *im.Runtime) (im.Fields, error) {
	f := im.Fields{}
	if err := f.Set(rt.Labels, "metadata", "labels"); err != nil {
		return nil, err
	}
	if err := f.Set(rt.Spec, "spec"); err != nil {
		return nil, err
	}
	return f, nil
}

// Administrators are the runtime's cluster administrators: the
// administrators parameter, else the user who asked for the runtime.
func Administrators(op *process.Operation, params catalog.ProvisioningParameters) []string {
	if len(params.Administrators) > 0 {
		return params.Administrators
	}
	return []string{op.Instance.UserID}
}

// requestContext is the part of the stored OSB context the Runtime CR uses.
type requestContext struct {
	LicenseType string `json:"license_type"`
}

func storedContext(op *process.Operation) requestContext {
	var c requestContext
	if len(op.Instance.Context) > 0 {
		_ = json.Unmarshal(op.Instance.Context, &c) // validated on accept
	}
	return c
}

// External reports an instance outside SAP (its stored context's licence
// type), whose egress is not filtered.
func External(op *process.Operation) bool {
	return catalog.ExternalLicence(storedContext(op).LicenseType)
}

// OIDCConfigs is the Runtime CR's additionalOidcConfig for the oidc
// parameter, as upstream KEB writes it: absent (or an empty object), the
// default provider; a legacy single object, the default with each field the
// object sets replaced (MergeOIDC); a list, its providers in order, each
// without a groupsPrefix taking the default's; an empty list, none. The
// legacy oidcConfig field is never written.
func OIDCConfigs(p *catalog.OIDC, def catalog.OIDCProvider) *[]im.OIDCConfig {
	one, many, listForm := p.Providers()
	if !listForm {
		c := OIDCConfig(def)
		if one != nil {
			c = MergeOIDC(c, *one)
		}
		return &[]im.OIDCConfig{c}
	}
	out := make([]im.OIDCConfig, 0, len(many))
	for _, m := range many {
		if m.GroupsPrefix == "" {
			m.GroupsPrefix = def.GroupsPrefix
		}
		out = append(out, OIDCConfig(m))
	}
	return &out
}

// MergeOIDC is base with each field p sets replacing base's: strings when
// not empty, signingAlgs and requiredClaims when not empty (requiredClaims
// ["-"]: none).
func MergeOIDC(base im.OIDCConfig, p catalog.OIDCProvider) im.OIDCConfig {
	over := OIDCConfig(p)
	for _, f := range []struct{ dst, src **string }{{&base.ClientID, &over.ClientID}, {&base.IssuerURL, &over.IssuerURL},
		{&base.GroupsClaim, &over.GroupsClaim}, {&base.GroupsPrefix, &over.GroupsPrefix},
		{&base.UsernameClaim, &over.UsernameClaim}, {&base.UsernamePrefix, &over.UsernamePrefix}} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if len(p.SigningAlgs) > 0 {
		base.SigningAlgs = over.SigningAlgs
	}
	switch {
	case len(p.RequiredClaims) == 1 && p.RequiredClaims[0] == "-":
		base.RequiredClaims = nil
	case len(p.RequiredClaims) > 0:
		base.RequiredClaims = over.RequiredClaims
	}
	return base
}

// OIDCConfig is one OIDC provider in the Runtime CR's form. Its JWKS
// (encodedJwksArray) has no field in the Runtime CR keb writes: the
// contract names none, so it is kept with the instance's parameters only.
func OIDCConfig(p catalog.OIDCProvider) im.OIDCConfig {
	c := im.OIDCConfig{ClientID: optional(p.ClientID), IssuerURL: optional(p.IssuerURL), GroupsClaim: optional(p.GroupsClaim),
		GroupsPrefix: optional(p.GroupsPrefix), SigningAlgs: append([]string(nil), p.SigningAlgs...),
		UsernameClaim: optional(p.UsernameClaim), UsernamePrefix: optional(p.UsernamePrefix)}
	for _, kv := range p.RequiredClaims {
		k, v, _ := strings.Cut(kv, "=")
		if c.RequiredClaims == nil {
			c.RequiredClaims = map[string]string{}
		}
		c.RequiredClaims[k] = v
	}
	return c
}

// Labels are the labels of the control-plane CRs of an operation's runtime
// that the infrastructure manager requires on a Runtime CR, with the
// hyperscaler region (a trial's too) in kyma-project.io/region.
func Labels(op *process.Operation) map[string]string {
	i := op.Instance
	return map[string]string{
		controlplane.LabelInstanceID:      i.InstanceID,
		controlplane.LabelRuntimeID:       op.Instance.RuntimeID,
		controlplane.LabelGlobalAccountID: i.GlobalAccountID,
		controlplane.LabelSubAccountID:    i.SubAccountID,
		controlplane.LabelPlanID:          i.PlanID,
		controlplane.LabelPlanName:        i.PlanName,
		controlplane.LabelRegion:          op.Record.ProviderRegion,
		controlplane.LabelPlatformRegion:  i.PlatformRegion,
		controlplane.LabelShootName:       op.Instance.ShootName,
		controlplane.LabelKymaName:        kyma.Name(op.Instance.RuntimeID),
	}
}

// RuntimeLabels are the Runtime CR's labels: Labels and the provider, by
// the name upstream KEB gives it (catalog.UpstreamProviderName).
func RuntimeLabels(op *process.Operation) map[string]string {
	l := Labels(op)
	l[controlplane.LabelProvider] = catalog.UpstreamProviderName(op.Record.Provider)
	return l
}

func mergeLabels(have, want map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	for k, v := range want {
		have[k] = v
	}
	return have
}

// KymaZones are the Kyma worker pool's availability zones: those the
// record holds (chosen before, or read from the Runtime CR), else the zones
// parameter's, else zonesCount of the region's zones chosen for the runtime
// (catalog.PickZones, seeded with the runtime ID: every run names the same).
func KymaZones(op *process.Operation, params catalog.ProvisioningParameters, cat *catalog.Catalog) []string {
	if len(op.Record.Zones) > 0 {
		return op.Record.Zones
	}
	if len(params.Zones) > 0 {
		return params.Zones
	}
	d := op.Record
	return cat.PickZones(d.Provider, d.ProviderRegion, kyma.Name(op.Instance.RuntimeID), d.ZonesCount)
}

func ptr[T any](v T) *T { return &v }
