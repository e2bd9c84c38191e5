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
)

// UpgradeKyma writes the new Kyma version into the Runtime CR
// (spec.kyma.version, which the infrastructure manager installs) and the
// new channel into the Kyma CR (spec.channel, which Lifecycle Manager
// follows). Both are merge patches of only those fields, so a re-run after a
// crash converges on the same objects.
type UpgradeKyma struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *UpgradeKyma) Name() string { return "upgrade_kyma" }

// Run implements process.Step.
func (s *UpgradeKyma) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	u := op.Record.Upgrade
	version, channel := u.KymaVersion, u.KymaChannel
	if version == "" {
		version = u.PreviousKymaVersion
	}
	if channel == "" {
		channel = u.PreviousKymaChannel
	}
	if u.DryRun {
		op.Describe("Dry run: would set Kyma version %s (now %s) and channel %s (now %s)", version, u.PreviousKymaVersion,
			channel, u.PreviousKymaChannel)
		return process.Done()
	}
	op.Describe("Upgrading Kyma to version %s, channel %s", version, channel)
	if channel != u.PreviousKymaChannel {
		err := kyma.SetChannel(ctx, s.KCP, controlplane.Namespace, kyma.Name(op.Instance.RuntimeID), channel)
		if apierrors.IsNotFound(err) {
			return process.Fail("the Kyma CR of runtime %s does not exist", op.Instance.RuntimeID)
		}
		if err != nil {
			return process.StepResult{}, fmt.Errorf("setting the Kyma CR's channel: %w", err)
		}
	}
	return patchRuntime(ctx, s.KCP, s.Config, op, func(rt *infrastructuremanager.Runtime) {
		rt.Spec.Kyma.Version = version
		if op.Record.OverridesSecret != "" {
			rt.Spec.Kyma.OverridesSecretRef = op.Record.OverridesSecret
		}
	})
}

// patchRuntime changes the runtime's Runtime CR with a merge patch and
// records the generation the infrastructure manager must reach.
func patchRuntime(ctx context.Context, kcp client.Client, cfg Config, op *process.Operation, change func(*infrastructuremanager.Runtime)) (process.StepResult, error) {
	rt := &infrastructuremanager.Runtime{}
	err := kcp.Get(ctx, client.ObjectKey{Namespace: cfg.Namespace, Name: kyma.Name(op.Instance.RuntimeID)}, rt)
	if apierrors.IsNotFound(err) {
		return process.Fail("the Runtime CR of runtime %s does not exist", op.Instance.RuntimeID)
	}
	if err != nil {
		return process.StepResult{}, fmt.Errorf("reading Runtime CR: %w", err)
	}
	base := rt.DeepCopy()
	change(rt)
	if err := kcp.Patch(ctx, rt, client.MergeFrom(base)); err != nil {
		return process.StepResult{}, fmt.Errorf("changing the Runtime CR: %w", err)
	}
	op.Record.Upgrade.Generation = rt.Generation
	return process.Done()
}
