// Package expiry ends the life of trial and free instances: an expired
// instance is suspended (its runtime deprovisioned, the instance kept with
// expiredAt set) and can no longer be resumed. Expiry comes from a periodic
// job for instances older than their plan's lifetime (plans.yaml's
// lifetimeDays), or from an operator's PUT /expire/service_instance/{id}.
package expiry

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	store store
	// lifetimes are how long instances of a plan (by name) live.
	lifetimes        map[string]time.Duration
	operationTimeout time.Duration
	log              logrus.FieldLogger
	now              func() time.Time
}

// New returns an Expirer suspending the instances of each plan in lifetimes
// (by plan name) once they are older than its lifetime; the suspensions it
// starts fail after operationTimeout.
func New(s store, lifetimes map[string]time.Duration, operationTimeout time.Duration, log logrus.FieldLogger) *Expirer {
	return &Expirer{store: s, lifetimes: lifetimes, operationTimeout: operationTimeout, log: log, now: time.Now}
}

// Lifetimes are the plans' lifetimes (plans.yaml's lifetimeDays) by plan
// name, for New; trialOverride, when positive, replaces the trial plan's
// (APP_TRIAL_DURATION).
func Lifetimes(plans []catalog.Plan, trialOverride, freeOverride time.Duration) map[string]time.Duration {
	lifetimes := map[string]time.Duration{}
	for _, p := range plans {
		if p.Lifetime > 0 {
			lifetimes[p.Name] = p.Lifetime
		}
	}
	if trialOverride > 0 {
		lifetimes[catalog.TrialPlanName] = trialOverride
	}
	if freeOverride > 0 {
		lifetimes[catalog.FreePlanName] = freeOverride
	}
	return lifetimes
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

// ExpireDue expires the instances older than their plan's lifetime and
// returns how many it expired. An instance it cannot expire now (an
// operation runs) is left for the next run.
func (e *Expirer) ExpireDue(ctx context.Context) (int, error) {
	n := 0
	var errs []error
	for _, plan := range slices.Sorted(maps.Keys(e.lifetimes)) {
		expired, err := e.expirePlan(ctx, plan, e.lifetimes[plan])
		n += expired
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// expirePlan expires one batch of the plan's instances older than lifetime.
func (e *Expirer) expirePlan(ctx context.Context, plan string, lifetime time.Duration) (int, error) {
	ids, err := e.store.ExpiryCandidates(ctx, []string{plan}, e.now().Add(-lifetime), batch)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, id := range ids {
		res, err := e.Expire(ctx, id)
		switch {
		case errors.Is(err, ErrBusy), errors.Is(err, storage.ErrNotFound):
			e.log.WithFields(logrus.Fields{"instance_id": id, "plan": plan}).WithError(err).Info("instance not expired this time")
		case err != nil:
			errs = append(errs, fmt.Errorf("expiring %s instance %s: %w", plan, id, err))
		default:
			n++
			e.log.WithFields(logrus.Fields{"instance_id": id, "plan": plan, "operation_id": res.OperationID}).Info("instance expired")
		}
	}
	return n, errors.Join(errs...)
}
