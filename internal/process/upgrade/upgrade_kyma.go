package upgrade

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// UpgradeKyma writes the new channel into the Kyma CR (spec.channel, which
// Lifecycle Manager follows), a merge patch of only that field, so a re-run
// after a crash converges on the same object. The Kyma version is keb's
// record (upgrade_overrides wrote it into the overrides Secret; the success
// hook records it): the Runtime CR has no field for it, and a Kyma upgrade
// leaves the Runtime CR alone.
type UpgradeKyma struct {
	KCP    client.Client
	Config Config
}

// Name implements process.Step.
func (s *UpgradeKyma) Name() string { return "upgrade_kyma" }

// Run implements process.Step.
func (s *UpgradeKyma) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	u := op.Record.Upgrade
	version, channel := op.Record.KymaVersion, u.KymaChannel
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
	return process.Done()
}
