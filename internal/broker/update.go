package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// Descriptions of the operations a PATCH starts, until a worker picks them up.
const (
	descriptionSuspendQueued = "Suspension accepted: the runtime will be deprovisioned, the instance kept"
	descriptionResumeQueued  = "Resumption accepted: waiting for a worker to provision the runtime again"
	descriptionUpdateQueued  = "Update accepted: waiting for a worker to push the new Service Manager credentials"
)

// Update serves PATCH /v2/service_instances/{instance_id}. Only the context
// changes anything: `active: false` suspends the instance (its runtime is
// deprovisioned, the instance stays), `active: true` resumes a suspended
// one (a new provisioning), and new sm_operator_credentials are stored and
// pushed into the running runtime at once. A change with nothing to run
// answers 200; one that starts an operation answers 202 with its ID.
func (b *Broker) Update(ctx context.Context, instanceID string, details domain.UpdateDetails, asyncAllowed bool) (domain.UpdateServiceSpec, error) {
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID})
	if !asyncAllowed {
		return domain.UpdateServiceSpec{}, errAsyncRequired
	}
	if err := ValidateStoredID("instance ID", instanceID); err != nil {
		return domain.UpdateServiceSpec{}, errBadRequest(err)
	}
	if p := normalizedParameters(details.RawParameters); !bytes.Equal(p, []byte("{}")) {
		return domain.UpdateServiceSpec{}, errUpdateParameters
	}
	uctx, err := catalog.ValidateUpdateContext(details.RawContext)
	if err != nil {
		return domain.UpdateServiceSpec{}, errBadRequest(err)
	}
	var newCreds []byte
	if uctx.SMOperatorCredentials != nil {
		if newCreds, err = json.Marshal(uctx.SMOperatorCredentials); err != nil {
			return domain.UpdateServiceSpec{}, b.internal(log, "encoding credentials", err)
		}
	}

	var started *storage.Operation
	var dashboardURL string
	err = b.store.ChangeInstance(ctx, instanceID, func(inst storage.Instance, running *storage.Operation) (storage.InstanceChange, error) {
		if details.PlanID != "" && details.PlanID != inst.PlanID {
			return storage.InstanceChange{}, errPlanChange
		}
		if (uctx.GlobalAccountID != "" && uctx.GlobalAccountID != inst.GlobalAccountID) ||
			(uctx.SubAccountID != "" && uctx.SubAccountID != inst.SubAccountID) {
			return storage.InstanceChange{}, errAccountMove
		}
		if running != nil {
			return storage.InstanceChange{}, errConcurrentInstanceAccess
		}
		change := storage.InstanceChange{}
		if len(bytes.TrimSpace(details.RawContext)) > 0 {
			merged, err := mergeContext(inst.Context, details.RawContext)
			if err != nil {
				return storage.InstanceChange{}, err
			}
			change.Context = merged
		}
		credsChanged := newCreds != nil && !sameCredentials(inst.Credentials, *uctx.SMOperatorCredentials)
		if credsChanged {
			change.Credentials = newCreds
		}
		switch {
		case uctx.Active != nil && !*uctx.Active && !inst.Suspended():
			started = b.newOperation(instanceID, storage.OperationTypeDeprovision, descriptionSuspendQueued)
			started.Temporary = true
		case uctx.Active != nil && *uctx.Active && inst.Suspended():
			if inst.ExpiredAt != nil {
				return storage.InstanceChange{}, errExpired(*inst.ExpiredAt)
			}
			started = b.newOperation(instanceID, storage.OperationTypeProvision, descriptionResumeQueued)
		case credsChanged && inst.State == storage.RuntimeSucceeded:
			started = b.newOperation(instanceID, storage.OperationTypeUpdate, descriptionUpdateQueued)
		}
		change.Operation = started
		// The console exists only while the runtime runs and keeps running:
		// a suspension deletes the cluster, and a resumption builds a new one
		// whose URL is not known yet.
		if !inst.Suspended() && (started == nil || started.Type == storage.OperationTypeUpdate) {
			dashboardURL = inst.DashboardURL
		}
		return change, nil
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return domain.UpdateServiceSpec{}, errInstanceNotFound
	case isOSBError(err):
		return domain.UpdateServiceSpec{}, err
	case err != nil:
		return domain.UpdateServiceSpec{}, b.internal(log, "storing update", err)
	}
	if started == nil {
		log.Info("update stored; nothing to run")
		return domain.UpdateServiceSpec{DashboardURL: dashboardURL}, nil
	}
	log.WithFields(logrus.Fields{"operation_id": started.ID, "type": started.Type, "temporary": started.Temporary}).
		Info("update accepted")
	return domain.UpdateServiceSpec{IsAsync: true, OperationData: started.ID, DashboardURL: dashboardURL}, nil
}

// mergeContext overlays the fields of a PATCH's context on the stored one,
// leaving out sm_operator_credentials, which are stored sealed, apart.
func mergeContext(stored, patch json.RawMessage) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &fields); err != nil {
			return nil, fmt.Errorf("decoding stored context: %w", err)
		}
	}
	var add map[string]json.RawMessage
	if err := json.Unmarshal(patch, &add); err != nil {
		return nil, fmt.Errorf("decoding context: %w", err)
	}
	for k, v := range add {
		fields[k] = v
	}
	delete(fields, "sm_operator_credentials")
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encoding context: %w", err)
	}
	return out, nil
}

// sameCredentials compares stored credentials with a request's by value, so
// that a platform re-sending its context does not trigger a push.
func sameCredentials(stored []byte, sent catalog.SMOperatorCredentials) bool {
	if stored == nil {
		return false
	}
	var have catalog.SMOperatorCredentials
	if err := json.Unmarshal(stored, &have); err != nil {
		return false
	}
	return reflect.DeepEqual(have, sent)
}
