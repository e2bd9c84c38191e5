package upgrade

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// Overrides refreshes the runtime's overrides Secret from the labelled
// override ConfigMaps and Secrets as they are now, with the Kyma version the
// upgrade installs and that version's component list for the runtime's
// plan, so that installers find the new version with the current
// configuration. An unknown version fails the upgrade here, before anything
// changed. A dry run resolves them (so a broken override or version shows)
// without writing the Secret.
type Overrides struct {
	Catalog *catalog.Catalog
	KCP     client.Client
	Config  Config
}

// Name implements process.Step.
func (s *Overrides) Name() string { return "upgrade_overrides" }

// Run implements process.Step.
func (s *Overrides) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	u := op.Record.Upgrade
	op.Describe("Refreshing configuration overrides%s", dryRunNote(u))
	params, err := provisioning.Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	version := u.KymaVersion
	if version == "" {
		version = u.PreviousKymaVersion
	}
	kymaRecord := overrides.Kyma{Version: version}
	if version != "" {
		comps, err := kyma.Components(version, op.Instance.PlanName, params.Components)
		if errors.Is(err, kyma.ErrUnknownKymaVersion) {
			return process.Fail("Kyma version %s is not supported: %v", version, err)
		}
		if err != nil {
			return process.StepResult{}, err
		}
		for _, c := range comps {
			kymaRecord.Components = append(kymaRecord.Components, c.Name)
		}
	}
	plan, _ := s.Catalog.PlanByID(op.Instance.PlanID)
	name, err := overrides.ForRuntime(ctx, s.KCP, s.KCP, s.Config.Namespace, plan.Lite, op.Instance.RuntimeID, op.InstanceID,
		kymaRecord, !u.DryRun)
	if err != nil {
		return process.StepResult{}, err
	}
	op.Record.KymaVersion, op.Record.Components, op.Record.OverridesSecret = version, kymaRecord.Components, name
	return process.Done()
}

// kymaRecord is what a Kyma upgrade leaves the runtime with.
func kymaRecord(op *process.Operation) *storage.KymaRecord {
	r := provisioning.KymaRecord(op)
	return &r
}
