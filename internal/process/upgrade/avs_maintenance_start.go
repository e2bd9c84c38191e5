package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// avsStatuses reads and sets AVS evaluations' lifecycle status (*avs.Client
// is one).
type avsStatuses interface {
	GetEvaluation(ctx context.Context, id int64) (avs.Evaluation, error)
	SetStatus(ctx context.Context, id int64, s avs.Status) error
}

// provisioningReader finds what the instance's provisioning recorded.
type provisioningReader interface {
	LastOperationOfType(ctx context.Context, instanceID string, opType storage.OperationType) (storage.Operation, error)
}

// avsMaintenanceTimeout is how long AVS's errors are retried before the
// upgrade fails: upstream's 10 minutes.
const avsMaintenanceTimeout = 10 * time.Minute

// AVSMaintenanceStart puts the runtime's AVS evaluations (those its
// provisioning created) into MAINTENANCE before a cluster upgrade touches
// the cluster, so that the upgrade's disruption raises no alert; as
// upstream's cluster-upgrade initialisation. It runs in two passes: the
// first reads each evaluation's live status and saves it as the status to
// restore, the second sets MAINTENANCE; a re-run after a crash therefore
// restores what was there before the upgrade, never MAINTENANCE. An
// evaluation already in MAINTENANCE is someone else's choice: it is left
// alone, and AVSMaintenanceEnd leaves it so. Dry runs and the global
// accounts of APP_AVS_MAINTENANCE_MODE_DURING_UPGRADE_ALWAYS_DISABLED_GLOBAL_ACCOUNTS_FILE_PATH
// are not touched.
type AVSMaintenanceStart struct {
	AVS          avsStatuses
	Provisioning provisioningReader
	Exemptions   avs.MaintenanceExemptions
}

// Name implements process.Step.
func (s *AVSMaintenanceStart) Name() string { return "avs_maintenance_start" }

// Timeout implements process.TimedStep.
func (s *AVSMaintenanceStart) Timeout() time.Duration { return avsMaintenanceTimeout }

// Remote implements process.RemoteStep.
func (s *AVSMaintenanceStart) Remote() string { return "AVS" }

// Run implements process.Step.
func (s *AVSMaintenanceStart) Run(ctx context.Context, op *process.Operation) (process.StepResult, error) {
	if u := op.Record.Upgrade; u != nil && u.DryRun || s.Exemptions.Exempt(op.Instance.GlobalAccountID) {
		return process.Done()
	}
	m := op.Record.AVSMaintenance
	if m == nil {
		ids, err := s.evaluations(ctx, op.InstanceID)
		if err != nil {
			return process.StepResult{}, err
		}
		m = &avs.Maintenance{Evaluations: []avs.InMaintenance{}}
		for _, id := range ids {
			ev, err := s.AVS.GetEvaluation(ctx, id)
			if err != nil {
				return avsError("reading AVS evaluation", id, err)
			}
			if ev.Status != avs.StatusMaintenance {
				m.Evaluations = append(m.Evaluations, avs.InMaintenance{ID: id, Original: ev.Status})
			}
		}
		op.Record.AVSMaintenance = m
		if len(m.Evaluations) == 0 {
			return process.Done()
		}
		// Saved before any status changes: the status to restore survives a crash.
		op.Describe("Putting the runtime's AVS evaluations into maintenance for the upgrade")
		return process.RetryAfter(time.Millisecond)
	}
	for i := range m.Evaluations {
		e := &m.Evaluations[i]
		if e.Set {
			continue
		}
		if err := s.AVS.SetStatus(ctx, e.ID, avs.StatusMaintenance); err != nil {
			return avsError("putting into maintenance AVS evaluation", e.ID, err)
		}
		e.Set = true
	}
	return process.Done()
}

// evaluations are the live evaluations the instance's newest provisioning
// created, internal first.
func (s *AVSMaintenanceStart) evaluations(ctx context.Context, instanceID string) ([]int64, error) {
	prov, err := s.Provisioning.LastOperationOfType(ctx, instanceID, storage.OperationTypeProvision)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the provisioning: %w", err)
	}
	var rec struct {
		AVS *avs.Record `json:"avs"`
	}
	if len(prov.Data) > 0 {
		if err := json.Unmarshal(prov.Data, &rec); err != nil {
			return nil, fmt.Errorf("decoding the provisioning's record: %w", err)
		}
	}
	var ids []int64
	for _, kind := range []avs.Kind{avs.Internal, avs.External} {
		if c := rec.AVS.Of(kind); c.Live() {
			ids = append(ids, c.ID)
		}
	}
	return ids, nil
}

// avsError retries what may heal (AVS down) and fails the upgrade on a
// refusal, as upstream.
func avsError(doing string, id int64, err error) (process.StepResult, error) {
	if avs.Temporary(err) {
		return process.StepResult{}, fmt.Errorf("%s %d: %w", doing, id, err)
	}
	return process.Fail("AVS refused %s %d: %v", doing, id, err)
}
