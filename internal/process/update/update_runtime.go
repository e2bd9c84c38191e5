package update

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// UpdateRuntime writes the change into the Runtime CR: the worker pool
// (machine type, autoscaler bounds, zones), the administrators, the OIDC
// authenticator, and on a plan change the provider, region, account,
// components and plan labels. Fields it does not own (a Kubernetes version,
// a machine image set by an upgrade) stay as they are.
type UpdateRuntime struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *UpdateRuntime) Name() string { return "update_runtime" }

// Run implements process.Step. A re-run computes the same spec, finds it in
// place and writes nothing, so the generation to wait for stays the same.
func (s *UpdateRuntime) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if !op.Request.ChangesRuntime() {
		return process.Done()
	}
	after, params, err := planned(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	d := op.Record
	comps, err := kyma.Components(d.KymaVersion, after.Instance.PlanName, params.Components)
	if errors.Is(err, kyma.ErrUnknownKymaVersion) {
		return process.Fail("Kyma version %s is not supported: %v", d.KymaVersion, err)
	}
	if err != nil {
		return process.StepResult{}, err
	}
	admins := params.Administrators
	if len(admins) == 0 {
		admins = []string{op.Instance.UserID}
	}

	op.Describe("Asking the infrastructure manager to apply the change to cluster %s", op.Instance.ShootName)
	rt := &infrastructuremanager.Runtime{}
	err = s.KCP.Get(ctx, client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, rt)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s disappeared before the update was applied", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	before := rt.DeepCopy()
	for k, v := range provisioning.Labels(after) {
		if rt.Labels == nil {
			rt.Labels = map[string]string{}
		}
		rt.Labels[k] = v
	}
	shoot := &rt.Spec.Shoot
	shoot.Region, shoot.SecretBindingName, shoot.Provider.Type = d.ProviderRegion, d.HyperscalerSecret, d.Provider
	if len(shoot.Provider.Workers) == 0 {
		shoot.Provider.Workers = []infrastructuremanager.Worker{{Name: "cpu-worker-0"}}
	}
	w := &shoot.Provider.Workers[0]
	w.MachineType, w.Minimum, w.Maximum = d.MachineType, d.AutoScalerMin, d.AutoScalerMax
	w.Zones = provisioning.Zones(d.Provider, d.ProviderRegion, d.ZonesCount)
	shoot.Kubernetes.KubeAPIServer.OIDCConfig = provisioning.OIDCConfig(params.OIDC)
	rt.Spec.Security.Administrators = admins
	rt.Spec.Kyma.Components = rt.Spec.Kyma.Components[:0]
	for _, c := range comps {
		rt.Spec.Kyma.Components = append(rt.Spec.Kyma.Components, c.Name)
	}
	if !equality.Semantic.DeepEqual(before.Spec, rt.Spec) || !equality.Semantic.DeepEqual(before.Labels, rt.Labels) {
		// Update carries the resourceVersion read above: a concurrent writer
		// makes it fail with a conflict, and the step runs again on a fresh read.
		if err := s.KCP.Update(ctx, rt); err != nil {
			return process.StepResult{}, fmt.Errorf("updating Runtime CR: %w", err)
		}
	}
	op.Record.RuntimeGeneration = rt.Generation
	return process.Done()
}
