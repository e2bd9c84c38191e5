package provisioning

import (
	"context"
	"errors"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// Components decides which Kyma components the runtime gets: the version's
// base list, minus those disabled for the plan, plus requested optional ones.
type Components struct {
	Catalog *catalog.Catalog
}

// Name implements process.Step.
func (s *Components) Name() string { return "components" }

// SharesCheckpoint implements process.SharedCheckpoint: the list follows
// from the record.
func (s *Components) SharesCheckpoint(*process.Operation) bool { return true }

// Run implements process.Step.
func (s *Components) Run(_ context.Context, op *process.Operation) (process.StepResult, error) {
	op.Describe("Choosing the Kyma components")
	params, err := Parameters(op)
	if err != nil {
		return process.Fail("%v", err)
	}
	plan, _ := s.Catalog.PlanByID(op.Instance.PlanID)
	comps, err := kyma.Components(op.Record.KymaVersion, plan.Name, params.Components)
	if errors.Is(err, kyma.ErrUnknownKymaVersion) {
		return process.Fail("Kyma version %s is not supported: %v", op.Record.KymaVersion, err)
	}
	if err != nil {
		return process.StepResult{}, err
	}
	op.Record.Components = op.Record.Components[:0]
	for _, c := range comps {
		op.Record.Components = append(op.Record.Components, c.Name)
	}
	return process.Done()
}
