package upgrade

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// Initialisation prepares an upgrade from the instance as provisioning left
// it: its runtime and shoot, and the values the upgrade replaces: the Kyma
// version from keb's record of it, the Kubernetes version and machine image
// from the Runtime CR, the channel from the Kyma CR (the source of truth,
// whatever an earlier upgrade or an operator did).
type Initialisation struct {
	KCP    client.Reader
	Config Config
}

// Name implements process.Step.
func (s *Initialisation) Name() string { return "upgrade_initialisation" }

// Run implements process.Step.
func (s *Initialisation) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	u := op.Record.Upgrade
	if u == nil {
		return process.Fail("the upgrade operation carries no upgrade target")
	}
	if op.Instance.RuntimeID == "" {
		return process.Fail("the instance has no runtime to upgrade")
	}
	// Steps read the identity from the instance (see process.Operation); the
	// record keeps a copy for operators reading this operation.
	op.Record.RuntimeID, op.Record.ShootName = op.Instance.RuntimeID, op.Instance.ShootName
	rt := &infrastructuremanager.Runtime{}
	err := s.KCP.Get(ctx, client.ObjectKey{Namespace: s.Config.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, rt)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s does not exist", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	u.PreviousKymaVersion = op.Instance.KymaVersion
	u.PreviousKubernetesVersion = deref(rt.Spec.Shoot.Kubernetes.Version)
	if i := rt.Spec.KymaWorker(); i >= 0 {
		if img := rt.Spec.Shoot.Provider.Workers[i].Machine.Image; img != nil {
			u.PreviousMachineImage = joinImage(img.Name, deref(img.Version))
		}
	}
	if op.Type == storage.OperationTypeUpgradeKyma {
		k := &kyma.Kyma{}
		err := s.KCP.Get(ctx, client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, k)
		if apierrors.IsNotFound(err) {
			return process.Fail("the Kyma CR of runtime %s does not exist", op.Instance.RuntimeID)
		}
		if err != nil {
			return process.StepResult{}, fmt.Errorf("reading Kyma CR: %w", err)
		}
		u.PreviousKymaChannel = k.Spec.Channel
	}
	op.Describe("Preparing the upgrade of runtime %s%s", op.Instance.RuntimeID, dryRunNote(u))
	return process.Done()
}

func joinImage(name, version string) string {
	if version == "" {
		return name
	}
	return name + " " + version
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func dryRunNote(u *process.Upgrade) string {
	if u.DryRun {
		return " (dry run: nothing is changed)"
	}
	return ""
}
