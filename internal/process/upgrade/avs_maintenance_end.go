package upgrade

import (
	"context"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/process"
)

// AVSMaintenanceEnd gives the evaluations AVSMaintenanceStart put into
// MAINTENANCE their status back (ACTIVE when the saved one is not a status
// AVS knows) once the upgrade is done; one an operator took out of
// MAINTENANCE meanwhile is left as it is. A failed upgrade restores them
// too (RestoreAfterFailure).
type AVSMaintenanceEnd struct {
	AVS avsStatuses
}

// Name implements process.Step.
func (s *AVSMaintenanceEnd) Name() string { return "avs_maintenance_end" }

// Timeout implements process.TimedStep.
func (s *AVSMaintenanceEnd) Timeout() time.Duration { return avsMaintenanceTimeout }

// Remote implements process.RemoteStep.
func (s *AVSMaintenanceEnd) Remote() string { return "AVS" }

// Run implements process.Step.
func (s *AVSMaintenanceEnd) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	m := op.Record.AVSMaintenance
	if m == nil {
		return process.Done()
	}
	op.Describe("Taking the runtime's AVS evaluations out of maintenance")
	for i := range m.Evaluations {
		e := &m.Evaluations[i]
		if !e.Set || e.Restored {
			continue
		}
		ev, err := s.AVS.GetEvaluation(ctx, e.ID)
		if err != nil {
			return avsError("reading AVS evaluation", e.ID, err)
		}
		if ev.Status == avs.StatusMaintenance {
			if err := s.AVS.SetStatus(ctx, e.ID, e.Restore()); err != nil {
				return avsError("restoring the status of AVS evaluation", e.ID, err)
			}
		}
		e.Restored = true
	}
	return process.Done()
}

// RestoreAfterFailure is the pipeline's Failed hook: a failed upgrade's
// evaluations leave maintenance too. One attempt, bounded: the operation
// is over, and an evaluation left in MAINTENANCE only mutes its alerts
// (the failure's description and the log say so).
func (s *AVSMaintenanceEnd) RestoreAfterFailure(ctx context.Context, op *process.Operation) error {
	if op.Record.AVSMaintenance == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.Run(ctx, op)
	if err == nil && res.Failure != nil {
		err = res.Failure
	}
	return err
}
