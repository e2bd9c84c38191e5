package update

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// UpdateRuntime writes the change into the Runtime CR, patching only the
// fields an update owns: the Kyma worker pool's machine type (when it
// changes: the plan or the machineType parameter), autoscaler
// bounds, zones (the CR's, grown when a plan has more), roll-out (when
// given) and disk, the administrators, the egress filter (from the licence), the OIDC authenticator (when the
// parameters set one), and on a plan change the
// provider, region, account, shoot purpose and plan labels. Every other field (a Kubernetes
// version or machine image set by an upgrade, an image registry cache, a
// worker's container runtime, labels or taints an operator set, other worker
// pools) stays as it is. A plan change changes the runtime's component list
// too: keb's records, and the overrides Secret that carries it.
type UpdateRuntime struct {
	KCP     client.Client
	Catalog *catalog.Catalog
	Config  Config
}

// Name implements process.Step.
func (s *UpdateRuntime) Name() string { return "update_runtime" }

// Run implements process.Step. A re-run computes the same change, finds it
// in place and writes nothing; the change recorded by the first run stays
// the one to wait for.
func (s *UpdateRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if !op.Request.ChangesRuntime() {
		return process.Done()
	}
	after, params, err := planned(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	d := &op.Record
	if d.KymaVersion != "" {
		comps, err := kyma.Components(d.KymaVersion, after.Instance.PlanName, params.Components)
		if errors.Is(err, kyma.ErrUnknownKymaVersion) {
			return process.Fail("Kyma version %s is not supported: %v", d.KymaVersion, err)
		}
		if err != nil {
			return process.StepResult{}, err
		}
		names := make([]string, 0, len(comps))
		for _, c := range comps {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, d.Components) && d.OverridesSecret != "" {
			err := overrides.SetKyma(ctx, s.KCP, s.Config.Namespace, d.OverridesSecret, overrides.Kyma{Version: d.KymaVersion, Components: names})
			if err != nil {
				return process.StepResult{}, err
			}
		}
		d.Components = names
	}

	op.Describe("Asking the infrastructure manager to apply the change to cluster %s", op.Instance.ShootName)
	key := client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}
	current := &im.Runtime{}
	if err := s.KCP.Get(ctx, key, current); apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared before the update was applied", op.Instance.RuntimeID)
	} else if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	before, err := provisioning.Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	newPlan := after.Instance.PlanID != op.Instance.PlanID
	// As upstream, the machine type is written only when it changes: the
	// CR keeps the one it has (a version-agnostic name resolved when it was
	// written, an operator's choice) through every other update.
	newMachine := newPlan || deref(params.MachineType) != deref(before.MachineType)
	fields, err := s.change(after, params, newPlan, newMachine, current)
	if err != nil {
		return process.StepResult{}, err
	}
	rt, changed, err := im.Patch(ctx, s.KCP, key, fields)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared before the update was applied", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, err
	}
	if changed {
		d.RuntimeWrite = im.NewWrite(rt, op.Now())
	}
	return process.Done()
}

// change is the part of the Runtime CR the update sets: after is the
// operation as it looks once the update is done; a new plan brings its
// shoot purpose too.
func (s *UpdateRuntime) change(after *process.Operation, params catalog.ProvisioningParameters, newPlan, newMachine bool,
	current *im.Runtime) (im.Fields, error) {
	d := after.Record
	plan, _ := s.Catalog.PlanByID(after.Instance.PlanID)
	worker := provisioning.KymaWorker(after, params, s.Catalog, plan, s.Config.Runtime)
	f := im.Fields{}
	type field struct {
		value any
		path  []string
	}
	sets := []field{
		{provisioning.RuntimeLabels(after), []string{"metadata", "labels"}},
		{d.ProviderRegion, []string{"spec", "shoot", "region"}},
		{d.HyperscalerSecret, []string{"spec", "shoot", "secretBindingName"}},
		{d.Provider, []string{"spec", "shoot", "provider", "type"}},
		{provisioning.Administrators(after, params), []string{"spec", "security", "administrators"}},
		// Recomputed from the licence, as upstream's update does.
		{!provisioning.External(after), []string{"spec", "security", "networking", "filter", "egress", "enabled"}},
	}
	if newPlan {
		sets = append(sets, field{plan.Purpose, []string{"spec", "shoot", "purpose"}})
	}
	for _, set := range sets {
		if err := f.Set(set.value, set.path...); err != nil {
			return nil, err
		}
	}
	// The worker pool as a one-entry list of only the fields an update
	// owns: im.Patch merges it into the pool of the same name.
	pool := map[string]any{"name": worker.Name,
		"minimum": worker.Minimum, "maximum": worker.Maximum, "zones": worker.Zones,
		"volume": map[string]any{"size": worker.Volume.VolumeSize}}
	if newMachine {
		pool["machine"] = map[string]any{"type": worker.Machine.Type}
	}
	// The roll-out: as the parameters say, else as the CR has it (an
	// operator's maxUnavailable stays); maxSurge follows a change of the
	// number of zones (a trial's upgrade).
	var zonesNow []string
	if i := current.Spec.KymaWorker(); i >= 0 {
		zonesNow = current.Spec.Shoot.Provider.Workers[i].Zones
	}
	if params.MaxSurge != nil || len(zonesNow) != len(worker.Zones) {
		pool["maxSurge"] = worker.MaxSurge
	}
	if params.MaxUnavailable != nil {
		pool["maxUnavailable"] = worker.MaxUnavailable
	}
	if g := params.GVisor; g != nil {
		// gVisor on: containerd with gVisor beside it; off: gVisor goes, a
		// container runtime set otherwise stays.
		if g.Enabled {
			pool["cri"] = worker.CRI
		} else {
			pool["cri"] = map[string]any{"containerRuntimes": nil}
		}
	}
	if err := f.Set([]any{pool}, "spec", "shoot", "provider", "workers"); err != nil {
		return nil, err
	}
	if err := setOIDC(f, params.OIDC, current, s.Catalog.DefaultOIDC()); err != nil {
		return nil, err
	}
	if pools := provisioning.AdditionalWorkers(after, params, s.Catalog, plan, s.Config.Runtime, worker.Zones, provisioning.PoolZonesOf(current)); pools != nil {
		// The parameter's list replaces the pools: a pool it no longer
		// lists is removed, labels, annotations and taints are overwritten.
		keepDisksAndImages(*pools, current)
		if err := f.SetWhole(*pools, "spec", "shoot", "provider", "additionalWorkers"); err != nil {
			return nil, err
		}
	}
	if on := params.IngressFiltering; on != nil {
		if err := f.Set(map[string]any{"enabled": *on}, "spec", "security", "networking", "filter", "ingress"); err != nil {
			return nil, err
		}
	}
	if params.AccessControlList != nil {
		// An empty list lifts the restriction: the field goes.
		var acl any
		if a := provisioning.ACL(params.AccessControlList); a != nil {
			acl = a
		}
		if err := f.Set(acl, "spec", "shoot", "kubernetes", "kubeAPIServer", "acl"); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// setOIDC puts the oidc parameter into f: the legacy form replaces every
// field of oidcConfig it models (one it leaves out is removed; a field it
// does not model stays) and drops a list; the list form replaces
// additionalOidcConfig and drops oidcConfig. Absent, nothing changes.
func setOIDC(f im.Fields, o *catalog.OIDC, current *im.Runtime, def catalog.OIDCProvider) error {
	one, many, listForm := o.Providers()
	path := func(field string) []string {
		return []string{"spec", "shoot", "kubernetes", "kubeAPIServer", field}
	}
	api := current.Spec.Shoot.Kubernetes.KubeAPIServer
	var list []im.OIDCConfig
	switch {
	case listForm:
		// The list replaces the providers, as given.
		list = make([]im.OIDCConfig, 0, len(many))
		for _, m := range many {
			list = append(list, provisioning.OIDCConfig(m))
		}
	case one != nil:
		// A legacy object merges over the first provider: the CR's, else
		// the legacy oidcConfig an earlier keb version wrote, else the
		// default; the other providers stay.
		base := provisioning.OIDCConfig(def)
		if api.AdditionalOIDCConfig != nil && len(*api.AdditionalOIDCConfig) > 0 {
			base = (*api.AdditionalOIDCConfig)[0]
			list = append(list, (*api.AdditionalOIDCConfig)[1:]...)
		} else if api.OIDCConfig != nil {
			base = *api.OIDCConfig
		}
		list = append([]im.OIDCConfig{provisioning.MergeOIDC(base, *one)}, list...)
	default:
		return nil
	}
	// Only additionalOidcConfig, as upstream: an earlier keb version's
	// oidcConfig moves there.
	if err := f.SetWhole(list, path("additionalOidcConfig")...); err != nil {
		return err
	}
	return f.Set(nil, path("oidcConfig")...)
}

// keepDisksAndImages gives each pool that current already has that pool's
// disk type and node image: as upstream KEB, only new pools take the
// settings' (an earlier keb's pools have neither, and Gardener would roll
// their nodes for a new disk type or image).
func keepDisksAndImages(pools []im.Worker, current *im.Runtime) {
	if current.Spec.Shoot.Provider.AdditionalWorkers == nil {
		return
	}
	have := map[string]im.Worker{}
	for _, w := range *current.Spec.Shoot.Provider.AdditionalWorkers {
		have[w.Name] = w
	}
	for i, p := range pools {
		w, ok := have[p.Name]
		if !ok {
			continue
		}
		pools[i].Machine.Image = w.Machine.Image
		if pools[i].Volume != nil {
			pools[i].Volume.Type = nil
			if w.Volume != nil {
				pools[i].Volume.Type = w.Volume.Type
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
