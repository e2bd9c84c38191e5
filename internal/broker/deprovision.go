package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/guardrails"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

const descriptionDeprovisionQueued = "Deprovisioning accepted: waiting for a worker to start it"

// DeprovisioningStore is the part of storage.Store that starts a
// deprovisioning.
type DeprovisioningStore interface {
	CreateDeprovisioning(ctx context.Context, op storage.Operation) (storage.Operation, bool, error)
}

// StartDeprovisioning accepts a deprovisioning of the instance exactly as a
// DELETE does: one transaction that halts a running provisioning, marks the
// instance deprovisioning and queues the operation (failing at deadline), or
// returns the deprovisioning already in progress (created false). The
// cleanup jobs start theirs here too, so the one-operation-per-instance
// rule, the archive and the account release apply to them alike. Errors are
// storage's: ErrNotFound for an unknown instance, ErrOperationInProgress
// while an update or a suspension runs.
func StartDeprovisioning(ctx context.Context, store DeprovisioningStore, instanceID string, deadline time.Time) (op storage.Operation, created bool, err error) {
	return store.CreateDeprovisioning(ctx,
		operationUntil(instanceID, storage.OperationTypeDeprovision, descriptionDeprovisionQueued, deadline))
}

// StartSubaccountDeprovisioning is StartDeprovisioning for an instance whose
// subaccount was deleted (the subaccount cleanup): the deprovisioning also
// soft-deletes the runtime's BTP service instances and bindings
// (process.Record.SubaccountDeleted), whose finalizers nobody will remove
// once the subaccount is gone.
func StartSubaccountDeprovisioning(ctx context.Context, store DeprovisioningStore, instanceID string, deadline time.Time) (op storage.Operation, created bool, err error) {
	o := operationUntil(instanceID, storage.OperationTypeDeprovision, descriptionDeprovisionQueued, deadline)
	if o.Data, err = json.Marshal(process.Record{SubaccountDeleted: true}); err != nil {
		return storage.Operation{}, false, err
	}
	return store.CreateDeprovisioning(ctx, o)
}

// Deprovision serves DELETE /v2/service_instances/{instance_id}. A DELETE
// while provisioning runs is accepted and halts the provisioning; a re-sent
// DELETE gets the operation already running.
func (b *Broker) Deprovision(ctx context.Context, instanceID string, details domain.DeprovisionDetails, asyncAllowed bool) (domain.DeprovisionServiceSpec, error) {
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID})
	if !asyncAllowed {
		return domain.DeprovisionServiceSpec{}, errAsyncRequired
	}
	if err := ValidateStoredID("instance ID", instanceID); err != nil {
		return domain.DeprovisionServiceSpec{}, errBadRequest(err)
	}
	// OSB sends the instance's service and plan with a DELETE; a request
	// naming another plan is meant for another instance and must not
	// deprovision this one. The plan of an instance never changes, so the
	// check needs no lock.
	inst, err := b.store.Instance(ctx, instanceID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return domain.DeprovisionServiceSpec{}, b.internal(log, "reading instance", err)
	default:
		if err := checkSamePlan(inst, details.ServiceID, details.PlanID); err != nil {
			return domain.DeprovisionServiceSpec{}, err
		}
		if err := b.blocked(guardrails.Deprovision, inst.PlanName, inst.GlobalAccountID); err != nil {
			return domain.DeprovisionServiceSpec{}, err
		}
	}
	op, created, err := StartDeprovisioning(ctx, b.store, instanceID, b.now().Add(b.opts.OperationTimeout))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return domain.DeprovisionServiceSpec{}, errInstanceGone
	case errors.Is(err, storage.ErrOperationInProgress):
		return domain.DeprovisionServiceSpec{}, errConcurrentInstanceAccess
	case err != nil:
		return domain.DeprovisionServiceSpec{}, b.internal(log, "storing deprovisioning", err)
	}
	if created {
		// On the request's access line when it has one (a line less).
		accepted := logrus.Fields{"accepted": "deprovisioning", "instance_id": instanceID, "operation_id": op.ID}
		if !logging.AddAccessFields(ctx, accepted) {
			log.WithFields(accepted).Info("deprovisioning accepted")
		}
	}
	return domain.DeprovisionServiceSpec{IsAsync: true, OperationData: op.ID}, nil
}

// checkSamePlan refuses a DELETE (of the instance or of one of its
// bindings) naming another service or plan than the instance's: it was meant
// for another instance.
func checkSamePlan(inst storage.Instance, serviceID, planID string) error {
	if inst.PlanID == planID && inst.ServiceID == serviceID {
		return nil
	}
	return errBadRequest(fmt.Errorf("instance %s is of service_id %s and plan_id %s (%s); the request names service_id %q and plan_id %q",
		inst.InstanceID, inst.ServiceID, inst.PlanID, inst.PlanName, serviceID, planID))
}
