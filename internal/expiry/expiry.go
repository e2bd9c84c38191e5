// Package expiry ends the life of trial and free instances: an expired
// instance is suspended (its runtime deprovisioned, the instance kept with
// expiredAt set) and can no longer be resumed. Expiry comes from a periodic
// job for trials older than the trial duration, or from an operator's PUT
// /expire/service_instance/{id}.
package expiry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/storage"
)

// Errors of Expire a caller tells apart.
var (
	ErrNotExpirable = errors.New("only trial and free instances expire")
	ErrBusy         = errors.New("another operation of the instance is in progress; retry when it has ended")
)

// ExpirablePlans are the plans whose instances expire.
var ExpirablePlans = []string{catalog.TrialPlanName, catalog.FreePlanName}

// descriptionExpired is what the suspension of an expired instance says
// until a worker picks it up.
const descriptionExpired = "Expired: the runtime will be deprovisioned, the instance kept as suspended"

// batch bounds how many instances one run of the periodic job expires: a
// backlog is worked off over several runs instead of one long transaction
// storm.
const batch = 500

// store is the part of storage.Store expiry uses.
type store interface {
	ChangeInstance(ctx context.Context, instanceID string, decide func(storage.Instance, *storage.Operation) (storage.InstanceChange, error)) error
	ExpiryCandidates(ctx context.Context, plans []string, createdBefore time.Time, limit int) ([]string, error)
}

// Expirer expires instances.
type Expirer struct {
	store            store
	trialDuration    time.Duration
	operationTimeout time.Duration
	log              logrus.FieldLogger
	now              func() time.Time
}

// New returns an Expirer suspending trials older than trialDuration; the
// suspensions it starts fail after operationTimeout.
func New(s store, trialDuration, operationTimeout time.Duration, log logrus.FieldLogger) *Expirer {
	return &Expirer{store: s, trialDuration: trialDuration, operationTimeout: operationTimeout, log: log, now: time.Now}
}

// Result says what Expire did.
type Result struct {
	// OperationID is the suspension started; empty when the instance was
	// already suspended (it is now marked expired, nothing else to do).
	OperationID string
	ExpiredAt   time.Time
}

// Expire marks a trial or free instance expired and suspends it. Expiring an
// expired instance again starts its suspension again only if the first one
// did not succeed, so the call is safe to repeat.
func (e *Expirer) Expire(ctx context.Context, instanceID string) (Result, error) {
	var res Result
	err := e.store.ChangeInstance(ctx, instanceID, func(inst storage.Instance, running *storage.Operation) (storage.InstanceChange, error) {
		if !slices.Contains(ExpirablePlans, inst.PlanName) {
			return storage.InstanceChange{}, fmt.Errorf("instance %s is on plan %s: %w", instanceID, inst.PlanName, ErrNotExpirable)
		}
		if running != nil {
			return storage.InstanceChange{}, fmt.Errorf("%w (%s operation %s)", ErrBusy, running.Type, running.ID)
		}
		var change storage.InstanceChange
		if inst.ExpiredAt == nil {
			now := e.now().UTC().Truncate(time.Microsecond) // what PostgreSQL keeps, so every answer agrees
			change.ExpiredAt = &now
			res.ExpiredAt = now
		} else {
			res.ExpiredAt = *inst.ExpiredAt
		}
		if !inst.Suspended() {
			change.Operation = &storage.Operation{
				ID: uuid.NewString(), InstanceID: instanceID, Type: storage.OperationTypeDeprovision,
				State: storage.OperationInProgress, Description: descriptionExpired, Temporary: true,
				Deadline: e.now().Add(e.operationTimeout),
			}
			res.OperationID = change.Operation.ID
		}
		return change, nil
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// ExpireDue expires the trials older than the trial duration and returns how
// many it expired. An instance it cannot expire now (an operation runs) is
// left for the next run.
func (e *Expirer) ExpireDue(ctx context.Context) (int, error) {
	ids, err := e.store.ExpiryCandidates(ctx, []string{catalog.TrialPlanName}, e.now().Add(-e.trialDuration), batch)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, id := range ids {
		res, err := e.Expire(ctx, id)
		switch {
		case errors.Is(err, ErrBusy), errors.Is(err, storage.ErrNotFound):
			e.log.WithField("instance_id", id).WithError(err).Info("trial not expired this time")
		case err != nil:
			errs = append(errs, fmt.Errorf("expiring trial %s: %w", id, err))
		default:
			n++
			e.log.WithFields(logrus.Fields{"instance_id": id, "operation_id": res.OperationID}).Info("trial expired")
		}
	}
	return n, errors.Join(errs...)
}
