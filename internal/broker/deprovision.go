package broker

import (
	"context"
	"errors"

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
