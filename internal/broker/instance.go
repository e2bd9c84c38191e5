package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/storage"
)

// GetInstance serves GET /v2/service_instances/{instance_id}: the plan, the
// dashboard URL while the runtime runs, and the parameters the runtime was
// built with (every default applied). OSB asks for a 404 until provisioning
// has succeeded and a 422 while an update runs.
func (b *Broker) GetInstance(ctx context.Context, instanceID string, _ domain.FetchInstanceDetails) (domain.GetInstanceDetailsSpec, error) {
	log := logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID})
	if err := ValidateStoredID("instance ID", instanceID); err != nil {
		return domain.GetInstanceDetailsSpec{}, errBadRequest(err)
	}
	inst, err := b.store.Instance(ctx, instanceID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return domain.GetInstanceDetailsSpec{}, errInstanceNotFound
	case err != nil:
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "reading instance", err)
	}
	op, err := b.store.LastOperation(ctx, instanceID)
	if err != nil {
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "reading last operation", err)
	}
	if op.Type == storage.OperationTypeUpdate && op.InProgress() {
		return domain.GetInstanceDetailsSpec{}, errConcurrentInstanceAccess
	}
	// Resolved parameters are recorded when a provisioning succeeds; an
	// instance without them has never had a runtime.
	params := inst.ResolvedParameters
	if bytes.Equal(normalizedParameters(params), []byte("{}")) {
		switch inst.State {
		case storage.RuntimeProvisioning:
			return domain.GetInstanceDetailsSpec{}, errInstanceBeingProvisioned
		case storage.RuntimeFailed:
			return domain.GetInstanceDetailsSpec{}, errInstanceNotProvisioned
		}
		// Provisioned before resolved parameters were kept: the request's.
		params = inst.Parameters
	}
	var decoded map[string]any
	if err := json.Unmarshal(params, &decoded); err != nil {
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "decoding stored parameters", err)
	}
	// The resolved form has no field for some parameters (administrators,
	// gvisor, modules, ...): those show as recorded, as sent.
	var sent map[string]any
	if err := json.Unmarshal(normalizedParameters(inst.Parameters), &sent); err != nil {
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "decoding recorded parameters", err)
	}
	if decoded == nil {
		decoded = map[string]any{}
	}
	for k, v := range sent {
		if _, has := decoded[k]; !has {
			decoded[k] = v
		}
	}
	// The Kyma version is keb's record of the runtime, not a resolved
	// parameter; it shows among them, as it always did.
	if v := inst.KymaVersion; v != "" {
		decoded["kymaVersion"] = v
	}
	spec := domain.GetInstanceDetailsSpec{ServiceID: inst.ServiceID, PlanID: inst.PlanID, Parameters: decoded}
	actions, err := b.store.Actions(ctx, instanceID)
	if err != nil {
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "reading actions", err)
	}
	attrs := map[string]string{}
	if history := actions[instanceID]; len(history) > 0 {
		// OSB's instance metadata attributes are strings: the history reads
		// as one line per change, oldest first.
		lines := make([]string, len(history))
		for i, a := range history {
			lines[i] = fmt.Sprintf("%s %s: %s", a.CreatedAt.UTC().Format(time.RFC3339), a.Type, a.Message)
		}
		attrs["actions"] = strings.Join(lines, "\n")
	}
	if err := kymaAttributes(inst, attrs); err != nil {
		return domain.GetInstanceDetailsSpec{}, b.internal(log, "decoding the Kyma module states", err)
	}
	if len(attrs) > 0 {
		spec.Metadata.Attributes = attrs
	}
	spec.Metadata.Labels = b.labels(ctx, inst)
	// A suspended instance, or one being torn down, has no console to link to.
	if inst.State != storage.RuntimeSuspended && inst.State != storage.RuntimeDeprovisioning {
		spec.DashboardURL = inst.DashboardURL
	}
	return spec, nil
}

// kymaAttributes adds to attrs what Lifecycle Manager reports on the
// runtime's Kyma CR, as the control-plane watch last saw it: kymaState,
// kymaModules (one line per module, "name: state", with the module's message
// after a further colon when it gives one) and btpOperatorState (the
// btp-operator module's state, which is its BtpOperator CR's). Nothing while
// the runtime has no Kyma CR.
func kymaAttributes(inst storage.Instance, attrs map[string]string) error {
	if inst.KymaState != nil {
		attrs["kymaState"] = *inst.KymaState
	}
	if len(inst.KymaModules) == 0 {
		return nil
	}
	var modules []kyma.ModuleHealth
	if err := json.Unmarshal(inst.KymaModules, &modules); err != nil {
		return err
	}
	lines := make([]string, 0, len(modules))
	for _, m := range modules {
		line := m.Name + ": " + string(m.State)
		if m.Message != "" {
			line += ": " + m.Message
		}
		lines = append(lines, line)
		if m.Name == kyma.ModuleBTPOperator {
			attrs["btpOperatorState"] = string(m.State)
		}
	}
	if len(lines) > 0 {
		attrs["kymaModules"] = strings.Join(lines, "\n")
	}
	return nil
}
