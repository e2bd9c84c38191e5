package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// binder is the binding service the broker hands binding requests to.
type binder interface {
	Bind(ctx context.Context, req binding.Request) (binding.Result, error)
	Get(ctx context.Context, instanceID, bindingID string) (binding.Credentials, json.RawMessage, error)
	LastOperation(ctx context.Context, instanceID, bindingID, operationID string) (storage.BindingState, string, error)
	Unbind(ctx context.Context, instanceID, bindingID string) error
}

// credentials is what a binding hands out: a kubeconfig for the runtime and
// when its token stops working.
func credentials(c binding.Credentials) map[string]any {
	return map[string]any{"kubeconfig": c.Kubeconfig, "expires_at": c.ExpiresAt.UTC().Format(time.RFC3339)}
}

// Bind serves PUT /v2/service_instances/{instance_id}/service_bindings/{binding_id}:
// a kubeconfig whose ServiceAccount lives in the instance's runtime.
// Synchronous unless the platform accepts an incomplete answer.
func (b *Broker) Bind(ctx context.Context, instanceID, bindingID string, details domain.BindDetails, asyncAllowed bool) (domain.Binding, error) {
	if b.opts.Bindings == nil {
		return domain.Binding{}, errBindingNotSupported
	}
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID, "binding_id": bindingID})
	if err := ValidateStoredID("instance ID", instanceID); err != nil {
		return domain.Binding{}, errBadRequest(err)
	}
	if err := validateLabelValueID("binding ID", bindingID); err != nil {
		return domain.Binding{}, errBadRequest(err)
	}
	if details.ServiceID != catalog.ServiceID {
		return domain.Binding{}, errBadRequest(fmt.Errorf("unknown service_id %q (keb offers %s)", details.ServiceID, catalog.ServiceID))
	}
	res, err := b.opts.Bindings.Bind(ctx, binding.Request{InstanceID: instanceID, BindingID: bindingID,
		PlanID: details.PlanID, Parameters: details.RawParameters, Async: asyncAllowed})
	if err != nil {
		return domain.Binding{}, b.bindingFailure(log, "binding", err)
	}
	switch {
	case res.Async:
		return domain.Binding{IsAsync: true, OperationData: res.OperationID}, nil
	case res.AlreadyExists:
		return domain.Binding{AlreadyExists: true, Credentials: credentials(res.Credentials)}, nil
	}
	return domain.Binding{Credentials: credentials(res.Credentials)}, nil
}

// GetBinding serves GET .../service_bindings/{binding_id}: the credentials
// again while the binding is valid; 404 while it is created, after it
// failed or expired.
func (b *Broker) GetBinding(ctx context.Context, instanceID, bindingID string, _ domain.FetchBindingDetails) (domain.GetBindingSpec, error) {
	if b.opts.Bindings == nil {
		return domain.GetBindingSpec{}, errBindingNotSupported
	}
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID, "binding_id": bindingID})
	if err := validateStoredIDs(instanceID, bindingID); err != nil {
		return domain.GetBindingSpec{}, errBadRequest(err)
	}
	creds, params, err := b.opts.Bindings.Get(ctx, instanceID, bindingID)
	if err != nil {
		return domain.GetBindingSpec{}, b.bindingFailure(log, "reading binding", err)
	}
	spec := domain.GetBindingSpec{Credentials: credentials(creds)}
	// Left unset (not a nil map, which would be answered as null) when the
	// binding was created without parameters.
	var decoded map[string]any
	if err := json.Unmarshal(params, &decoded); err == nil && len(decoded) > 0 {
		spec.Parameters = decoded
	}
	return spec, nil
}

// Unbind serves DELETE .../service_bindings/{binding_id}: the
// ServiceAccount and ClusterRoleBinding go from the runtime (the kubeconfig
// stops working at once), synchronously; 410 when unknown. A request naming
// another service or plan than the instance's is refused, as for a
// deprovisioning: it was meant for another instance's binding.
func (b *Broker) Unbind(ctx context.Context, instanceID, bindingID string, details domain.UnbindDetails, _ bool) (domain.UnbindSpec, error) {
	if b.opts.Bindings == nil {
		return domain.UnbindSpec{}, errBindingNotSupported
	}
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID, "binding_id": bindingID})
	if err := validateStoredIDs(instanceID, bindingID); err != nil {
		return domain.UnbindSpec{}, errBadRequest(err)
	}
	inst, err := b.store.Instance(ctx, instanceID)
	switch {
	case errors.Is(err, storage.ErrNotFound): // the binding is gone with it: 410 below
	case err != nil:
		return domain.UnbindSpec{}, b.internal(log, "reading instance", err)
	default:
		if err := checkSamePlan(inst, details.ServiceID, details.PlanID); err != nil {
			return domain.UnbindSpec{}, err
		}
	}
	if err := b.opts.Bindings.Unbind(ctx, instanceID, bindingID); err != nil {
		return domain.UnbindSpec{}, b.bindingFailure(log, "unbinding", err)
	}
	return domain.UnbindSpec{}, nil
}

// LastBindingOperation serves GET .../service_bindings/{binding_id}/last_operation
// for asynchronous binds.
func (b *Broker) LastBindingOperation(ctx context.Context, instanceID, bindingID string, details domain.PollDetails) (domain.LastOperation, error) {
	if b.opts.Bindings == nil {
		return domain.LastOperation{}, errBindingNotSupported
	}
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID, "binding_id": bindingID})
	if err := validateStoredIDs(instanceID, bindingID); err != nil {
		return domain.LastOperation{}, errBadRequest(err)
	}
	if details.OperationData != "" {
		if err := ValidateStoredID("operation", details.OperationData); err != nil {
			return domain.LastOperation{}, errBadRequest(err)
		}
	}
	state, description, err := b.opts.Bindings.LastOperation(ctx, instanceID, bindingID, details.OperationData)
	if err != nil {
		return domain.LastOperation{}, b.bindingFailure(log, "reading binding operation", err)
	}
	if state == storage.BindingInProgress {
		hintsFrom(ctx).RetryAfter = b.opts.RetryAfter
	}
	return domain.LastOperation{State: domain.LastOperationState(state), Description: description}, nil
}

// bindingFailure answers a refused binding request with its OSB status;
// anything else is logged and answered as an internal error.
func (b *Broker) bindingFailure(log logrus.FieldLogger, action string, err error) error {
	var refused *binding.Error
	if !errors.As(err, &refused) {
		return b.internal(log, action, err)
	}
	log.WithField("reason", refused.Message).Info(action + " refused")
	return errBinding(refused)
}

func validateStoredIDs(instanceID, bindingID string) error {
	if err := ValidateStoredID("instance ID", instanceID); err != nil {
		return err
	}
	return ValidateStoredID("binding ID", bindingID)
}
