package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/guardrails"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/seeds"
	"github.com/kyma-keb/keb/internal/storage"
)

// descriptionQueued is what a freshly accepted provisioning says until a
// worker picks it up.
const descriptionQueued = "Provisioning accepted: waiting for a worker to start it"

// Provision serves PUT /v2/service_instances/{instance_id}. It validates the
// request, and either recognises a re-sent request (same operation, or 200
// once provisioned) or writes the instance and its operation in one
// transaction and answers 202.
func (b *Broker) Provision(ctx context.Context, instanceID string, details domain.ProvisionDetails, asyncAllowed bool) (domain.ProvisionedServiceSpec, error) {
	// Built when something is logged: an accept logs nothing of its own.
	log := func() logrus.FieldLogger {
		return logging.FromContext(ctx, b.log).WithFields(logrus.Fields{"instance_id": instanceID, "plan_id": details.PlanID})
	}
	if !asyncAllowed {
		return domain.ProvisionedServiceSpec{}, errAsyncRequired
	}
	if err := validateNewInstanceID(instanceID); err != nil {
		return domain.ProvisionedServiceSpec{}, errBadRequest(err)
	}
	region := b.platformRegion(ctx)
	plan, pctx, resolved, storedContext, err := b.validateProvisioning(ctx, details, region)
	var unreadable *seedsUnavailable
	switch {
	case errors.As(err, &unreadable):
		if _, known := b.store.Instance(ctx, instanceID); known == nil {
			// A re-sent PUT of an existing instance gets that instance's answer.
			return b.refuseInvalid(ctx, log(), instanceID, details, region, err)
		}
		log().WithError(unreadable.err).Warn("colocateControlPlane: cannot read the seed regions")
		return domain.ProvisionedServiceSpec{}, errSeedsUnavailable(unreadable.err)
	case err != nil:
		return b.refuseInvalid(ctx, log(), instanceID, details, region, err)
	}
	if msg := b.opts.AllowedGlobalAccounts.Refusal(pctx.GlobalAccountID); msg != "" {
		return domain.ProvisionedServiceSpec{}, errBlocked(msg)
	}
	if err := b.blocked(guardrails.Provision, plan.Name, pctx.GlobalAccountID); err != nil {
		return domain.ProvisionedServiceSpec{}, err
	}
	if b.opts.Quota != nil {
		msg, err := b.opts.Quota.Refusal(ctx, plan.ID, plan.Name, pctx.SubAccountID, instanceID)
		switch {
		case err != nil:
			log().WithError(err).Warn("quota check failed")
			return domain.ProvisionedServiceSpec{}, errQuotaUnavailable
		case msg != "":
			return domain.ProvisionedServiceSpec{}, errBlocked(msg)
		}
	}
	b.noteUnsupported(log, plan, region, details.RawParameters)
	inst := storage.Instance{
		InstanceID:      instanceID,
		GlobalAccountID: pctx.GlobalAccountID,
		SubAccountID:    pctx.SubAccountID,
		UserID:          pctx.UserID,
		ServiceID:       details.ServiceID,
		PlanID:          plan.ID,
		PlanName:        plan.Name,
		PlatformRegion:  region,
		Provider:        resolved.Provider,
		ProviderRegion:  resolved.ProviderRegion,
		Parameters:      normalizedParameters(details.RawParameters),
		Context:         storedContext,
	}
	if plan.OnePerGlobalAccount {
		// The unique index on (global account, this) refuses a second one,
		// race-free, inside the accept transaction.
		inst.OnePerGlobalAccountPlan = &plan.Name
	}
	if pctx.SMOperatorCredentials != nil {
		if inst.Credentials, err = json.Marshal(pctx.SMOperatorCredentials); err != nil {
			return domain.ProvisionedServiceSpec{}, b.internal(log(), "encoding credentials", err)
		}
	}
	op := b.newOperation(instanceID, storage.OperationTypeProvision, descriptionQueued)
	// The plan's defaults are resolved once, here: provisioning builds the
	// runtime with these values, whatever plans.yaml says by then.
	var record process.Record
	record.SetResolved(resolved)
	if op.Data, err = json.Marshal(record); err != nil {
		return domain.ProvisionedServiceSpec{}, b.internal(log(), "encoding resolved parameters", err)
	}

	err = b.store.CreateProvisioning(ctx, inst, *op)
	switch {
	case err == nil:
		// On the request's access line when it has one (a line less).
		accepted := logrus.Fields{"accepted": "provisioning", "instance_id": instanceID, "operation_id": op.ID,
			"plan_id": details.PlanID}
		if !logging.AddAccessFields(ctx, accepted) {
			log().WithFields(accepted).Info("provisioning accepted")
		}
		return domain.ProvisionedServiceSpec{IsAsync: true, OperationData: op.ID}, nil
	case errors.Is(err, storage.ErrAlreadyExists):
		// A re-sent request, or a conflicting one: the stored instance decides.
		have, err := b.store.Instance(ctx, instanceID)
		if err != nil {
			return domain.ProvisionedServiceSpec{}, b.internal(log(), "reading existing instance", err)
		}
		return b.provisionExisting(ctx, log(), have, inst)
	case errors.Is(err, storage.ErrArchived):
		return domain.ProvisionedServiceSpec{}, errConflict("the instance ID belongs to a deprovisioned instance")
	case errors.Is(err, storage.ErrOnePerGlobalAccount):
		return domain.ProvisionedServiceSpec{}, errOnePerGlobalAccount(plan.Name)
	default:
		return domain.ProvisionedServiceSpec{}, b.internal(log(), "storing provisioning", err)
	}
}

// noteUnsupported logs and counts the parameters the plan's schema does not
// name, which a lenient catalog (APP_BROKER_REJECT_UNSUPPORTED_PARAMETERS
// false) lets through, so that operators see what platforms send.
func (b *Broker) noteUnsupported(log func() logrus.FieldLogger, plan catalog.Plan, region string, raw json.RawMessage) {
	names := b.catalog.UnsupportedParameters(plan.ID, region, raw)
	if len(names) == 0 {
		return
	}
	log().WithField("parameters", names).Warn("ignoring parameters the plan's schema does not name")
	if c := b.opts.UnsupportedParameters; c != nil {
		for _, n := range names {
			top, _, _ := strings.Cut(n, ".")
			top, _, _ = strings.Cut(top, "[")
			c.WithLabelValues(plan.Name, b.unsupported.label(top)).Inc()
		}
	}
}

// maxUnsupportedLabels bounds the parameter names keb_unsupported_parameters_total
// keeps apart: names come from requests, and each would be a series for good.
const maxUnsupportedLabels = 100

// unsupportedLabels hands out the first maxUnsupportedLabels parameter names
// as labels, and "other" after them.
type unsupportedLabels struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (u *unsupportedLabels) label(name string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	if u.seen[name] || len(u.seen) < maxUnsupportedLabels && len(name) <= 64 {
		u.seen[name] = true
		return name
	}
	return "other"
}

// validateProvisioning checks a PUT's plan, context and parameters and
// resolves the plan's defaults; its error is the client's mistake.
func (b *Broker) validateProvisioning(ctx context.Context, details domain.ProvisionDetails, region string) (
	plan catalog.Plan, pctx catalog.ProvisioningContext, resolved catalog.Resolved, storedContext json.RawMessage, err error) {
	plan, ok := b.catalog.PlanByID(details.PlanID)
	if !ok {
		return plan, pctx, resolved, nil, fmt.Errorf("plan %s is not offered", details.PlanID)
	}
	// Whether the request's path names its platform region (free is refused on /oauth/v2).
	pathRegion := regionFrom(ctx) != ""
	if err := b.catalog.PlatformProviderProblem(plan, region, pathRegion); err != nil {
		return plan, pctx, resolved, nil, err
	}
	if pctx, err = catalog.ValidateContext(details.RawContext); err != nil {
		return plan, pctx, resolved, nil, err
	}
	params, err := b.catalog.ValidateParameters(plan.ID, region, details.RawParameters)
	if err != nil {
		return plan, pctx, resolved, nil, err
	}
	if err := catalog.LicenceProblems(params, pctx.LicenseType); err != nil {
		return plan, pctx, resolved, nil, err
	}
	if err := catalog.GVisorProblems(params, pctx.GlobalAccountID, b.opts.GVisorGlobalAccounts); err != nil {
		return plan, pctx, resolved, nil, err
	}
	if resolved, err = b.catalog.Resolve(plan.ID, region, params); err != nil {
		return plan, pctx, resolved, nil, err
	}
	if params.Colocated() {
		if err := b.colocation(ctx, resolved, region); err != nil {
			return plan, pctx, resolved, nil, err
		}
	}
	storedContext, err = contextWithoutCredentials(details.RawContext)
	return plan, pctx, resolved, storedContext, err
}

// colocation checks colocateControlPlane against the seed regions the control plane lists now
// (read per request, as upstream does: seeds come and go without a keb restart). A
// *seedsUnavailable says they could not be read.
func (b *Broker) colocation(ctx context.Context, r catalog.Resolved, platformRegion string) error {
	if b.opts.Seeds == nil {
		return &seedsUnavailable{err: fmt.Errorf("%w: keb runs without a control plane (APP_KCP_KUBECONFIG)", seeds.ErrUnavailable)}
	}
	regions, err := b.opts.Seeds.Regions(ctx, r.Provider)
	if err != nil {
		return &seedsUnavailable{err: err}
	}
	return b.catalog.ColocationProblem(r, platformRegion, regions)
}

// seedsUnavailable is a provisioning's colocation that could not be checked: not the
// request's mistake.
type seedsUnavailable struct{ err error }

func (e *seedsUnavailable) Error() string { return e.err.Error() }

// refuseInvalid answers a PUT whose body keb cannot accept. OSB's rule for a
// taken instance ID comes first: a PUT of an existing ID with different
// attributes is a 409 Conflict whatever the new body holds (a platform
// resolves a conflict differently from a bad request), and one with the
// attributes the instance was accepted with gets that instance's answer, even
// if plans.yaml has tightened the schema since. Only a free ID gets the 400.
// The lookups cost accepted requests nothing: only refused bodies make them.
func (b *Broker) refuseInvalid(ctx context.Context, log logrus.FieldLogger, instanceID string,
	details domain.ProvisionDetails, region string, invalid error) (domain.ProvisionedServiceSpec, error) {
	have, err := b.store.Instance(ctx, instanceID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		if _, err := b.store.Archived(ctx, instanceID); err == nil {
			return domain.ProvisionedServiceSpec{}, errConflict("the instance ID belongs to a deprovisioned instance")
		} else if !errors.Is(err, storage.ErrNotFound) {
			return domain.ProvisionedServiceSpec{}, b.internal(log, "reading archived instance", err)
		}
		return domain.ProvisionedServiceSpec{}, errBadRequest(invalid)
	case err != nil:
		return domain.ProvisionedServiceSpec{}, b.internal(log, "reading existing instance", err)
	}
	// The attributes as sent: the context is read as far as it can be.
	var accounts struct {
		GlobalAccountID string `json:"globalaccount_id"`
		SubAccountID    string `json:"subaccount_id"`
	}
	_ = json.Unmarshal(details.RawContext, &accounts)
	want := storage.Instance{InstanceID: instanceID, ServiceID: details.ServiceID, PlanID: details.PlanID,
		PlatformRegion: region, Parameters: normalizedParameters(details.RawParameters),
		GlobalAccountID: accounts.GlobalAccountID, SubAccountID: accounts.SubAccountID}
	return b.provisionExisting(ctx, log, have, want)
}

// provisionExisting answers a PUT for an instance ID that is taken, per OSB:
// identical attributes get the running operation (202) or 200 once
// provisioned (a suspended instance exists too); anything else is a 409.
func (b *Broker) provisionExisting(ctx context.Context, log logrus.FieldLogger, have, want storage.Instance) (domain.ProvisionedServiceSpec, error) {
	if diff := differences(have, want); diff != "" {
		return domain.ProvisionedServiceSpec{}, errConflict(diff)
	}
	op, err := b.store.LastOperation(ctx, want.InstanceID)
	if err != nil {
		return domain.ProvisionedServiceSpec{}, b.internal(log, "reading last operation", err)
	}
	switch {
	case op.Type == storage.OperationTypeProvision && op.InProgress():
		return domain.ProvisionedServiceSpec{IsAsync: true, OperationData: op.ID}, nil
	case op.Type == storage.OperationTypeProvision && op.State == storage.OperationFailed:
		return domain.ProvisionedServiceSpec{}, errConflict("its provisioning failed; deprovision it, then provision again")
	case op.InProgress():
		return domain.ProvisionedServiceSpec{}, errConcurrentInstanceAccess
	case op.Type == storage.OperationTypeDeprovision && !op.Temporary:
		return domain.ProvisionedServiceSpec{}, errConflict("the instance is deprovisioned")
	default:
		return domain.ProvisionedServiceSpec{AlreadyExists: true, DashboardURL: have.DashboardURL,
			Metadata: domain.InstanceMetadata{Labels: b.labels(ctx, have)}}, nil
	}
}

// differences names the attributes in which two requests for one instance
// differ, or returns "" when OSB considers them identical.
func differences(have, want storage.Instance) string {
	var diff []string
	if have.ServiceID != want.ServiceID {
		diff = append(diff, "service_id")
	}
	if have.PlanID != want.PlanID {
		diff = append(diff, "plan_id")
	}
	if !jsonEqual(have.Parameters, want.Parameters) {
		diff = append(diff, "parameters")
	}
	if have.GlobalAccountID != want.GlobalAccountID {
		diff = append(diff, "context.globalaccount_id")
	}
	if have.SubAccountID != want.SubAccountID {
		diff = append(diff, "context.subaccount_id")
	}
	if have.PlatformRegion != want.PlatformRegion {
		diff = append(diff, "platform region")
	}
	if len(diff) == 0 {
		return ""
	}
	return strings.Join(diff, ", ") + " differ"
}

// normalizedParameters treats absent parameters as {} (OSB: absent equals
// empty), compacts the JSON and writes whole numbers as integers
// (catalog.WholeNumbers): the validator takes 20.0 for the integer 20, and
// the parameters are stored in the form keb decodes them back into its
// typed parameters.
func normalizedParameters(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return catalog.WholeNumbers(buf.Bytes())
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(normalizedParameters(a), &x) != nil || json.Unmarshal(normalizedParameters(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// contextWithoutCredentials keeps every context field the platform sent
// except sm_operator_credentials, which is stored sealed, apart.
func contextWithoutCredentials(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	// An object without credentials is stored as it came (a jsonb column:
	// PostgreSQL drops the spacing and orders the keys as a re-encoding
	// would), without a decoding and an encoding per accept. A backslash
	// could spell the key with escapes: such a context is decoded.
	if trimmed[0] == '{' && !bytes.Contains(raw, []byte("sm_operator_credentials")) &&
		!bytes.ContainsRune(raw, '\\') && json.Valid(raw) {
		return raw, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("context must be a JSON object: %w", err)
	}
	delete(fields, "sm_operator_credentials")
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("encoding context: %w", err)
	}
	return out, nil
}
