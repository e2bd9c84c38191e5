package broker

import (
	"context"
	"errors"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
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

// Deprovision serves DELETE /v2/service_instances/{instance_id}. A DELETE
// while provisioning runs is accepted and halts the provisioning; a re-sent
// DELETE gets the operation already running.
func (b *Broker) Deprovision(ctx context.Context, instanceID string, details domain.DeprovisionDetails, asyncAllowed bool) (domain.DeprovisionServiceSpec, error) {
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID})
	if !asyncAllowed {
		return domain.DeprovisionServiceSpec{}, errAsyncRequired
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
		log.WithField("operation_id", op.ID).Info("deprovisioning accepted")
	}
	return domain.DeprovisionServiceSpec{IsAsync: true, OperationData: op.ID}, nil
}
