package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

const descriptionDeprovisionQueued = "Deprovisioning accepted: waiting for a worker to start it"

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
	case inst.DeletedAt == nil && (inst.PlanID != details.PlanID || inst.ServiceID != details.ServiceID):
		return domain.DeprovisionServiceSpec{}, errBadRequest(fmt.Errorf(
			"instance %s is of service_id %s and plan_id %s (%s); the request names service_id %q and plan_id %q",
			instanceID, inst.ServiceID, inst.PlanID, inst.PlanName, details.ServiceID, details.PlanID))
	}
	op, created, err := b.store.CreateDeprovisioning(ctx,
		*b.newOperation(instanceID, storage.OperationTypeDeprovision, descriptionDeprovisionQueued))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return domain.DeprovisionServiceSpec{}, errInstanceGone
	case errors.Is(err, storage.ErrOperationInProgress):
		return domain.DeprovisionServiceSpec{}, errConcurrentInstanceAccess
	case err != nil:
		return domain.DeprovisionServiceSpec{}, b.internal(log, "storing deprovisioning", err)
	}
	if created {
		log.WithField("operation_id", op.ID).Info("deprovisioning accepted")
	}
	return domain.DeprovisionServiceSpec{IsAsync: true, OperationData: op.ID}, nil
}
