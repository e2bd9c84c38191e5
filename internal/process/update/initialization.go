package update

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// Initialization resolves what the runtime becomes: the parameters after
// the PATCH with the (new) plan's defaults applied, on top of the runtime's
// Kyma record (keb's, in the instance) and the account its Runtime CR names.
type Initialization struct {
	Catalog *catalog.Catalog
	KCP     client.Reader
	Config  Config
}

// Name implements process.Step.
func (s *Initialization) Name() string { return "update_initialization" }

// Run implements process.Step.
func (s *Initialization) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if !op.Request.ChangesRuntime() {
		return process.Done()
	}
	after, params, err := planned(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	op.Describe("Preparing the update: applying the defaults of plan %s", after.Instance.PlanName)
	res, err := s.Catalog.Resolve(after.Instance.PlanID, op.Instance.PlatformRegion, params)
	if err != nil {
		return process.Fail("resolving plan defaults: %v", err)
	}
	rt := &infrastructuremanager.Runtime{}
	err = s.KCP.Get(ctx, client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, rt)
	if apierrors.IsNotFound(err) || op.Instance.RuntimeID == "" {
		return process.Fail("the runtime %s has no Runtime CR to update", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	d := &op.Record
	d.RuntimeID, d.ClusterID, d.ShootName = op.Instance.RuntimeID, op.Instance.ClusterID, rt.Spec.Shoot.Name
	k := op.Instance.KymaRecord
	d.KymaVersion, d.Components, d.OverridesSecret = k.KymaVersion, k.KymaComponents, k.OverridesSecret
	d.HyperscalerSecret = rt.Spec.Shoot.SecretBindingName
	d.Provider, d.Region, d.ProviderRegion = res.Provider, res.Region, res.ProviderRegion
	d.MachineType, d.AutoScalerMin, d.AutoScalerMax, d.ZonesCount = res.MachineType, res.AutoScalerMin, res.AutoScalerMax, res.ZonesCount
	// The zones stay those the Runtime CR has (whichever keb version chose
	// them): a running pool's zones do not move. A plan with more zones (a
	// trial's upgrade) adds zones to them.
	var have []string
	if i := rt.Spec.KymaWorker(); i >= 0 && rt.Spec.Shoot.Region == d.ProviderRegion {
		have = rt.Spec.Shoot.Provider.Workers[i].Zones
	}
	if len(params.Zones) > 0 {
		d.Zones = params.Zones
	} else {
		d.Zones = s.Catalog.KeepZones(have, d.Provider, d.ProviderRegion, kyma.Name(op.Instance.RuntimeID), d.ZonesCount)
	}
	if after.Instance.PlanID != op.Instance.PlanID {
		op.Conclude("Operation succeeded: the runtime moved from plan %s to plan %s", op.Instance.PlanName, after.Instance.PlanName)
	} else {
		op.Conclude("Operation succeeded: the runtime runs with the new parameters")
	}
	return process.Done()
}

// planned is the operation as it looks once the update is done: its
// instance on the requested plan with the requested parameters, and those
// parameters decoded. Provisioning's helpers (labels, Kyma CR, resolved
// parameters) take it as they take a provisioning.
func planned(op *process.Operation) (*process.Operation, catalog.ProvisioningParameters, error) {
	after := *op
	r := op.Request
	after.Instance.PlanID, after.Instance.PlanName, after.Instance.Parameters = r.PlanID, r.PlanName, r.Parameters
	params, err := provisioning.Parameters(&after)
	if err != nil {
		return nil, params, fmt.Errorf("the update's parameters: %w", err)
	}
	return &after, params, nil
}
