package broker

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// GetInstance serves GET /v2/service_instances/{instance_id}. OSB asks for a
// 404 until provisioning has succeeded and a 422 while an update runs.
func (b *Broker) GetInstance(ctx context.Context, instanceID string, _ domain.FetchInstanceDetails) (domain.GetInstanceDetailsSpec, error) {
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID})
	inst, err := b.store.Instance(ctx, instanceID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return domain.GetInstanceDetailsSpec{}, errInstanceNotFound
	case err != nil:
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "reading instance", err)
	}
	if inst.DeletedAt != nil {
		return domain.GetInstanceDetailsSpec{}, errInstanceNotFound
	}
	op, err := b.store.LastOperation(ctx, instanceID)
	if err != nil {
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "reading last operation", err)
	}
	switch {
	case op.Type == storage.OperationTypeProvision && op.InProgress():
		return domain.GetInstanceDetailsSpec{}, errInstanceBeingProvisioned
	case op.Type == storage.OperationTypeProvision && op.State == storage.StateFailed:
		return domain.GetInstanceDetailsSpec{}, errInstanceNotProvisioned
	case op.Type == storage.OperationTypeUpdate && op.InProgress():
		return domain.GetInstanceDetailsSpec{}, errConcurrentInstanceAccess
	}
	var params map[string]any
	if err := json.Unmarshal(inst.Parameters, &params); err != nil {
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "decoding stored parameters", err)
	}
	return domain.GetInstanceDetailsSpec{
		ServiceID:    inst.ServiceID,
		PlanID:       inst.PlanID,
		DashboardURL: inst.DashboardURL,
		Parameters:   params,
	}, nil
}

// Update serves PATCH /v2/service_instances/{instance_id}; keb does not
// update instances yet and says so with an OSB error.
func (b *Broker) Update(context.Context, string, domain.UpdateDetails, bool) (domain.UpdateServiceSpec, error) {
	return domain.UpdateServiceSpec{}, errUpdateNotSupported
}

// Bind answers that the service is not bindable (the catalog says so too).
func (b *Broker) Bind(context.Context, string, string, domain.BindDetails, bool) (domain.Binding, error) {
	return domain.Binding{}, errBindingNotSupported
}

// Unbind answers that the service is not bindable.
func (b *Broker) Unbind(context.Context, string, string, domain.UnbindDetails, bool) (domain.UnbindSpec, error) {
	return domain.UnbindSpec{}, errBindingNotSupported
}

// GetBinding answers that the service is not bindable.
func (b *Broker) GetBinding(context.Context, string, string, domain.FetchBindingDetails) (domain.GetBindingSpec, error) {
	return domain.GetBindingSpec{}, errBindingNotSupported
}

// LastBindingOperation answers that the service is not bindable.
func (b *Broker) LastBindingOperation(context.Context, string, string, domain.PollDetails) (domain.LastOperation, error) {
	return domain.LastOperation{}, errBindingNotSupported
}
