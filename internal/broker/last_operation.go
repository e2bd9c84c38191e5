package broker

import (
	"context"
	"errors"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// LastOperation serves GET /v2/service_instances/{instance_id}/last_operation.
// Without an operation parameter it reports the newest operation. While the
// operation runs it asks the platform to come back after Retry-After.
func (b *Broker) LastOperation(ctx context.Context, instanceID string, details domain.PollDetails) (domain.LastOperation, error) {
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID, "operation_id": details.OperationData})
	if err := ValidateStoredID("instance ID", instanceID); err != nil {
		return domain.LastOperation{}, errBadRequest(err)
	}
	if details.OperationData != "" {
		if err := ValidateStoredID("operation", details.OperationData); err != nil {
			return domain.LastOperation{}, errBadRequest(err)
		}
	}
	op, err := b.store.PollOperation(ctx, instanceID, details.OperationData)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return b.goneOrArchived(ctx, log, instanceID, details.OperationData)
	case err != nil:
		return domain.LastOperation{}, b.internal(log, "reading operation", err)
	case !op.Found:
		return domain.LastOperation{}, errOperationNotFound
	}
	if op.InProgress() {
		hintsFrom(ctx).RetryAfter = b.opts.RetryAfter
	}
	return domain.LastOperation{State: domain.LastOperationState(op.State), Description: op.Description}, nil
}

// descriptionDeprovisioned is what a finished deprovisioning says once its
// instance is gone.
const descriptionDeprovisioned = "Operation succeeded: the runtime is deprovisioned"

// goneOrArchived answers a poll for an instance without a row. For a
// deprovisioned instance, a poll of its deprovisioning says succeeded, and a
// poll without an operation gets 410, which OSB platforms take as success.
// Anything else is unknown: 404.
func (b *Broker) goneOrArchived(ctx context.Context, log logrus.FieldLogger, instanceID, operationID string) (domain.LastOperation, error) {
	a, err := b.store.Archived(ctx, instanceID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return domain.LastOperation{}, errInstanceNotFound
	case err != nil:
		return domain.LastOperation{}, b.internal(log, "reading archive", err)
	case operationID == a.LastDeprovisioningID:
		desc := a.DeprovisioningDescription
		if desc == "" { // archived before the description was kept
			desc = descriptionDeprovisioned
		}
		return domain.LastOperation{State: domain.Succeeded, Description: desc}, nil
	case operationID == "":
		return domain.LastOperation{}, errInstanceGone
	default:
		return domain.LastOperation{}, errOperationNotFound
	}
}
