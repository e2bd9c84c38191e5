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
	"github.com/kyma-keb/keb/internal/guardrails"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// Descriptions of the operations a PATCH starts, until a worker picks them up.
const (
	descriptionSuspendQueued = "Suspension accepted: the runtime will be deprovisioned, the instance kept"
	descriptionResumeQueued  = "Resumption accepted: waiting for a worker to provision the runtime again"
	descriptionUpdateQueued  = "Update accepted: waiting for a worker to push the new Service Manager credentials"
	descriptionParamsQueued  = "Update accepted: waiting for a worker to apply the new parameters to the runtime"
	descriptionPlanQueued    = "Update accepted: waiting for a worker to move the runtime from plan %s to plan %s"
	descriptionMoveQueued    = "Update accepted: waiting for a worker to relabel the runtime with its new global account"
)

// actionID is the operation an action belongs to, or a new ID when the
// change runs none.
func actionID(op *storage.Operation) string {
	if op == nil {
		return newOperationID()
	}
	return op.ID
}

// Update serves PATCH /v2/service_instances/{instance_id}. In the context,
// `active: false` suspends the instance (its runtime is deprovisioned, the
// instance stays), `active: true` resumes a suspended one (a new
// provisioning), and new sm_operator_credentials are stored and pushed into
// the running runtime at once. Parameters (the plan's update schema) and a
// plan_id among the plan's upgradableToPlans change a running runtime: the
// update operation applies them and records them only once it succeeded.
// A change with nothing to run (parameters equal to the recorded ones)
// answers 200; one that starts an operation answers 202 with its ID.
func (b *Broker) Update(ctx context.Context, instanceID string, details domain.UpdateDetails, asyncAllowed bool) (domain.UpdateServiceSpec, error) {
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID})
	if !asyncAllowed {
		return domain.UpdateServiceSpec{}, errAsyncRequired
	}
	if err := ValidateStoredID("instance ID", instanceID); err != nil {
		return domain.UpdateServiceSpec{}, errBadRequest(err)
	}
	sentParameters := !bytes.Equal(normalizedParameters(details.RawParameters), []byte("{}"))
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
	// changed is the instance as the update found it, for its labels.
	var changed storage.Instance
	err = b.store.ChangeInstance(ctx, instanceID, func(inst storage.Instance, running *storage.Operation) (storage.InstanceChange, error) {
		moved := uctx.GlobalAccountID != "" && uctx.GlobalAccountID != inst.GlobalAccountID
		if (moved && !b.opts.SubaccountMovement) || (uctx.SubAccountID != "" && uctx.SubAccountID != inst.SubAccountID) {
			return storage.InstanceChange{}, errAccountMove
		}
		if running != nil {
			return storage.InstanceChange{}, errConcurrentInstanceAccess
		}
		if err := b.blocked(guardrails.Update, inst.PlanName, inst.GlobalAccountID); err != nil {
			return storage.InstanceChange{}, err
		}
		if details.PlanID != "" && details.PlanID != inst.PlanID {
			// A plan upgrade is blocked by the plan it goes to.
			target := details.PlanID
			if p, ok := b.catalog.PlanByID(details.PlanID); ok {
				target = p.Name
			}
			if err := b.blocked(guardrails.PlanUpgrade, target, inst.GlobalAccountID); err != nil {
				return storage.InstanceChange{}, err
			}
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
		// The licence rules hold for the context after the PATCH: a new
		// licence type must fit the parameters the runtime keeps.
		licence := licenceType(inst.Context)
		if change.Context != nil {
			licence = licenceType(change.Context)
		}
		planChange := details.PlanID != "" && details.PlanID != inst.PlanID
		var request *storage.UpdateRequest
		if sentParameters || planChange {
			if request, err = b.runtimeUpdate(inst, uctx.Active, details, licence); err != nil {
				return storage.InstanceChange{}, err
			}
		} else if licence != licenceType(inst.Context) {
			stored, err := storedParameters(inst)
			if err != nil {
				return storage.InstanceChange{}, err
			}
			if err := catalog.LicenceProblems(stored, licence); err != nil {
				return storage.InstanceChange{}, errBadRequest(err)
			}
		}
		switch {
		case request != nil:
			request.Credentials = credsChanged
			description := descriptionParamsQueued
			if planChange {
				description = fmt.Sprintf(descriptionPlanQueued, inst.PlanName, request.PlanName)
			}
			started = b.newOperation(instanceID, storage.OperationTypeUpdate, description)
			started.Request = request
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
		if moved {
			// The subaccount moved to another global account: stored now,
			// and a running runtime's CRs are relabelled by an update.
			change.GlobalAccountID = uctx.GlobalAccountID
			if started == nil && inst.State == storage.RuntimeSucceeded {
				started = b.newOperation(instanceID, storage.OperationTypeUpdate, descriptionMoveQueued)
			}
			if started != nil && started.Type == storage.OperationTypeUpdate {
				if started.Request == nil {
					started.Request = &storage.UpdateRequest{PlanID: inst.PlanID, PlanName: inst.PlanName, Credentials: credsChanged}
				}
				started.Request.GlobalAccountMoved = true
			}
			change.Action = &storage.Action{OperationID: actionID(started) + ":" + string(storage.ActionSubaccountMovement),
				Type: storage.ActionSubaccountMovement, OldValue: inst.GlobalAccountID, NewValue: uctx.GlobalAccountID,
				Message: fmt.Sprintf("subaccount %s moved from global account %s to %s", inst.SubAccountID,
					inst.GlobalAccountID, uctx.GlobalAccountID)}
		}
		change.Operation = started
		changed = inst
		if started != nil && started.Type != storage.OperationTypeUpdate {
			// A suspension or resumption: no runtime to link to meanwhile.
			changed.State = storage.RuntimeProvisioning
		}
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
	case errors.Is(err, storage.ErrOnePerGlobalAccount):
		return domain.UpdateServiceSpec{}, errBadRequest(errors.New("the global account the subaccount moves to already has an instance of this plan, of which it may have one"))
	case isOSBError(err):
		return domain.UpdateServiceSpec{}, err
	case err != nil:
		return domain.UpdateServiceSpec{}, b.internal(log, "storing update", err)
	}
	meta := domain.InstanceMetadata{Labels: b.labels(ctx, changed)}
	if started == nil {
		log.Info("update stored; nothing to run")
		return domain.UpdateServiceSpec{DashboardURL: dashboardURL, Metadata: meta}, nil
	}
	log.WithFields(logrus.Fields{"operation_id": started.ID, "type": started.Type, "temporary": started.Temporary}).
		Info("update accepted")
	return domain.UpdateServiceSpec{IsAsync: true, OperationData: started.ID, DashboardURL: dashboardURL, Metadata: meta}, nil
}

// runtimeUpdate decides a PATCH's parameters and plan on the locked
// instance: it returns the update to run, or nil when the parameters after
// the PATCH are the recorded ones and the plan stays (nothing to run). Only a
// running runtime, not being suspended by the same PATCH, changes.
func (b *Broker) runtimeUpdate(inst storage.Instance, active *bool, details domain.UpdateDetails, licence string) (*storage.UpdateRequest, error) {
	stored, err := storedParameters(inst)
	if err != nil {
		return nil, err
	}
	merged, err := b.catalog.ValidateUpdate(catalog.UpdateRequest{
		FromPlanID: inst.PlanID, ToPlanID: details.PlanID, PlatformRegion: inst.PlatformRegion,
		ProviderRegion: inst.ProviderRegion, Stored: stored, Raw: details.RawParameters,
	})
	if err == nil {
		err = catalog.LicenceProblems(merged, licence)
	}
	if err == nil {
		err = catalog.GVisorProblems(merged, inst.GlobalAccountID, b.opts.GVisorGlobalAccounts)
	}
	var verr *catalog.ValidationError
	switch {
	case errors.As(err, &verr), errors.Is(err, catalog.ErrPlanNotUpgradable), errors.Is(err, catalog.ErrUnknownPlan):
		return nil, errBadRequest(err)
	case err != nil:
		return nil, err
	}
	before, err := json.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("encoding stored parameters: %w", err)
	}
	after, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("encoding parameters: %w", err)
	}
	planID := inst.PlanID
	if details.PlanID != "" {
		planID = details.PlanID
	}
	if planID == inst.PlanID && bytes.Equal(before, after) {
		return nil, nil
	}
	if inst.State != storage.RuntimeSucceeded || active != nil && !*active {
		return nil, errRuntimeNotRunning(inst.State)
	}
	plan, _ := b.catalog.PlanByID(planID)
	return &storage.UpdateRequest{PlanID: plan.ID, PlanName: plan.Name, Parameters: after}, nil
}

// licenceType is a stored (validated) context's license_type.
func licenceType(ctx json.RawMessage) string {
	var c struct {
		LicenseType string `json:"license_type"`
	}
	_ = json.Unmarshal(ctx, &c) // validated when stored
	return c.LicenseType
}

// storedParameters decodes an instance's recorded parameters.
func storedParameters(inst storage.Instance) (catalog.ProvisioningParameters, error) {
	var stored catalog.ProvisioningParameters
	if err := json.Unmarshal(normalizedParameters(inst.Parameters), &stored); err != nil {
		return stored, fmt.Errorf("decoding stored parameters: %w", err)
	}
	return stored, nil
}

// mergeContext overlays the fields of a PATCH's context on the stored one,
// leaving out sm_operator_credentials, which are stored sealed, apart: a
// field sent replaces the stored one, and fields keb does not read are kept
// as the platform sent them. The result is bounded as a PUT's context is,
// so that PATCHes each adding a field cannot grow it without end.
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
	if len(out) > catalog.MaxContextSize {
		return nil, errBadRequest(fmt.Errorf("invalid context: merged with the stored context it would be %d bytes; "+
			"at most %d KiB are kept (a PATCH's context fields are added to the stored ones)", len(out), catalog.MaxContextSize>>10))
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
