package upgrade

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// UpgradeCluster writes the new Kubernetes version and the Kyma worker
// pool's machine image into the Runtime CR, for the infrastructure manager
// to roll out: a patch of only those fields (im.Patch), recording the write
// for await_upgrade.
type UpgradeCluster struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *UpgradeCluster) Name() string { return "upgrade_cluster" }

// Run implements process.Step. A re-run finds the change in place, writes
// nothing and keeps the write the first run recorded.
func (s *UpgradeCluster) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	u := op.Record.Upgrade
	image := joinImage(u.MachineImage, u.MachineImageVersion)
	if u.DryRun {
		op.Describe("Dry run: would set Kubernetes version %s (now %s) and machine image %s (now %s)",
			orKeep(u.KubernetesVersion), orKeep(u.PreviousKubernetesVersion), orKeep(image), orKeep(u.PreviousMachineImage))
		return process.Done()
	}
	op.Describe("Upgrading the cluster to Kubernetes %s, machine image %s", orKeep(u.KubernetesVersion), orKeep(image))
	f := im.Fields{}
	if u.KubernetesVersion != "" {
		if err := f.Set(u.KubernetesVersion, "spec", "shoot", "kubernetes", "version"); err != nil {
			return process.StepResult{}, err
		}
	}
	if u.MachineImage != "" || u.MachineImageVersion != "" {
		img := map[string]any{}
		if u.MachineImage != "" {
			img["name"] = u.MachineImage
		}
		if u.MachineImageVersion != "" {
			img["version"] = u.MachineImageVersion
		}
		pool := map[string]any{"name": im.KymaWorkerName, "machine": map[string]any{"image": img}}
		if err := f.Set([]any{pool}, "spec", "shoot", "provider", "workers"); err != nil {
			return process.StepResult{}, err
		}
	}
	if len(f) == 0 {
		return process.Done()
	}
	key := client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}
	rt, changed, err := im.Patch(ctx, s.KCP, key, f)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s does not exist", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, err
	}
	if changed {
		op.Record.RuntimeWrite = im.NewWrite(rt, op.Now())
	}
	return process.Done()
}

func orKeep(v string) string {
	if v == "" {
		return "(unchanged)"
	}
	return v
}
