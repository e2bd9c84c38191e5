package upgrade

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process"
)

// UpgradeCluster writes the new Kubernetes version and machine image into
// the Runtime CR, for the infrastructure manager to roll out.
type UpgradeCluster struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *UpgradeCluster) Name() string { return "upgrade_cluster" }

// Run implements process.Step.
func (s *UpgradeCluster) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	u := op.Record.Upgrade
	image := joinImage(u.MachineImage, u.MachineImageVersion)
	if u.DryRun {
		op.Describe("Dry run: would set Kubernetes version %s (now %s) and machine image %s (now %s)",
			orKeep(u.KubernetesVersion), orKeep(u.PreviousKubernetesVersion), orKeep(image), orKeep(u.PreviousMachineImage))
		return process.Done()
	}
	op.Describe("Upgrading the cluster to Kubernetes %s, machine image %s", orKeep(u.KubernetesVersion), orKeep(image))
	return patchRuntime(ctx, s.KCP, s.Config, op, func(rt *infrastructuremanager.Runtime) {
		if u.KubernetesVersion != "" {
			rt.Spec.Shoot.Kubernetes.Version = u.KubernetesVersion
		}
		for i := range rt.Spec.Shoot.Provider.Workers {
			w := &rt.Spec.Shoot.Provider.Workers[i]
			if u.MachineImage != "" {
				w.MachineImage = u.MachineImage
			}
			if u.MachineImageVersion != "" {
				w.MachineImageVersion = u.MachineImageVersion
			}
		}
	})
}

func orKeep(v string) string {
	if v == "" {
		return "(unchanged)"
	}
	return v
}
