package broker

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pivotal-cf/brokerapi/v10/domain/apiresponses"

	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/storage"
)

// Every OSB failure keb answers is named here. brokerapi matches failures
// with a type switch, not errors.As, so these are returned unwrapped.
var (
	errAsyncRequired = apiresponses.ErrAsyncRequired
	// errConcurrentInstanceAccess uses the spec's own description: OSB
	// clients match it verbatim to recognise a ConcurrencyError.
	errConcurrentInstanceAccess = apiresponses.NewFailureResponseBuilder(
		errors.New("The Service Broker does not support concurrent requests that mutate the same resource."),
		http.StatusUnprocessableEntity, "concurrent-instance-access").WithErrorKey("ConcurrencyError").Build()
	// errInstanceGone is OSB's 410 for a DELETE of an unknown or gone
	// instance; the spec asks for an empty JSON object as its body.
	errInstanceGone     = apiresponses.ErrInstanceDoesNotExist
	errInstanceNotFound = apiresponses.NewFailureResponseBuilder(
		errors.New("instance does not exist"), http.StatusNotFound, "instance-not-found").
		WithErrorKey("NotFound").Build()
	errInstanceBeingProvisioned = apiresponses.NewFailureResponseBuilder(
		errors.New("instance is being provisioned; poll last_operation until it succeeds"), http.StatusNotFound,
		"instance-being-provisioned").WithErrorKey("NotFound").Build()
	errInstanceNotProvisioned = apiresponses.NewFailureResponseBuilder(
		errors.New("instance provisioning did not succeed"), http.StatusNotFound,
		"instance-not-provisioned").WithErrorKey("NotFound").Build()
	errOperationNotFound = apiresponses.NewFailureResponseBuilder(
		errors.New("operation does not exist for this instance"), http.StatusNotFound, "operation-not-found").
		WithErrorKey("NotFound").Build()
	errAccountMove = apiresponses.NewFailureResponseBuilder(
		errors.New("moving an instance to another global account or subaccount is not supported"),
		http.StatusUnprocessableEntity, "account-move-not-supported").WithErrorKey("UpdateNotSupported").Build()
	errBindingNotSupported = apiresponses.NewFailureResponseBuilder(
		errors.New("bindings are not available: keb runs without a control plane (APP_KCP_KUBECONFIG)"), http.StatusBadRequest,
		"binding-not-supported").WithErrorKey("BindingNotSupported").Build()
	// errUnavailable answers a request the database could not serve (down,
	// frozen, or too slow for the request's deadline). A 503, not a 500:
	// OSB platforms start orphan mitigation on a 5xx to PUT, but a 503 with
	// Retry-After says "nothing happened, try again", which is the truth:
	// the request's transaction committed nothing.
	errUnavailable = apiresponses.NewFailureResponseBuilder(
		errors.New("the broker's database is unavailable; nothing was changed, retry later"),
		http.StatusServiceUnavailable, "database-unavailable").WithErrorKey("ServiceUnavailable").Build()
	errInternal = apiresponses.NewFailureResponseBuilder(
		errors.New("internal error: the broker could not complete the request; retry later"),
		http.StatusInternalServerError, "internal-error").WithErrorKey("InternalError").Build()
)

// errOnePerGlobalAccount refuses a second instance of a plan that plans.yaml
// allows once per global account (onePerGlobalAccount). Every such plan gets
// the answer the trial plan always got, error key included, so that clients
// written against the trial rule need no change.
func errOnePerGlobalAccount(planName string) error {
	return apiresponses.NewFailureResponseBuilder(
		fmt.Errorf("the global account already has a %s Kyma runtime; only one is allowed", planName),
		http.StatusBadRequest, "one-per-global-account").WithErrorKey("TrialExists").Build()
}

// errConflict is OSB's 409 for a PUT whose attributes differ from the
// existing instance's; why says what differs.
func errConflict(why string) error {
	return apiresponses.NewFailureResponseBuilder(
		fmt.Errorf("instance already exists with different attributes: %s", why), http.StatusConflict,
		"instance-conflict").WithErrorKey("Conflict").Build()
}

// errBinding answers a refused binding request: each kind of refusal has
// its OSB status, and the description is the binding service's own text.
func errBinding(e *binding.Error) error {
	switch e.Kind {
	case binding.KindConcurrent:
		return errConcurrentInstanceAccess
	case binding.KindGone:
		return apiresponses.ErrBindingDoesNotExist
	}
	status, key := http.StatusBadRequest, "BadRequest"
	switch e.Kind {
	case binding.KindLimit:
		key = "BindingLimitReached"
	case binding.KindConflict:
		status, key = http.StatusConflict, "Conflict"
	case binding.KindNotBindable:
		status, key = http.StatusUnprocessableEntity, "InstanceNotBindable"
	case binding.KindInstanceNotFound, binding.KindNotFound:
		status, key = http.StatusNotFound, "NotFound"
	case binding.KindUnavailable:
		status, key = http.StatusServiceUnavailable, "ServiceUnavailable"
	}
	return apiresponses.NewFailureResponseBuilder(errors.New(e.Message), status, "binding-refused").WithErrorKey(key).Build()
}

// errBadRequest is a 400 whose description names the offending fields.
// errBlocked refuses an operation a guardrail blocks (the operation
// blocklist, the allowed global accounts) with the operator's message.
func errBlocked(msg string) error {
	return apiresponses.NewFailureResponseBuilder(errors.New(msg), http.StatusBadRequest, "operation-blocked").
		WithErrorKey("BadRequest").Build()
}

// errQuotaUnavailable answers a provisioning whose quota CIS could not
// tell: nothing was written, the platform may retry.
var errQuotaUnavailable = apiresponses.NewFailureResponseBuilder(
	errors.New("the subaccount's quota could not be checked (CIS is unavailable); nothing was changed, retry later"),
	http.StatusServiceUnavailable, "quota-unavailable").WithErrorKey("ServiceUnavailable").Build()

// errSeedsUnavailable answers a provisioning asking for colocateControlPlane whose seed regions
// could not be read (the control plane's ConfigMap missing, or without the provider): nothing
// was written; the operator fixes the ConfigMap and the platform retries.
func errSeedsUnavailable(err error) error {
	return apiresponses.NewFailureResponseBuilder(
		fmt.Errorf("colocateControlPlane cannot be checked: %w; nothing was changed, retry later or provision without colocateControlPlane", err),
		http.StatusServiceUnavailable, "seeds-unavailable").WithErrorKey("ServiceUnavailable").Build()
}

func errBadRequest(err error) error {
	return apiresponses.NewFailureResponseBuilder(err, http.StatusBadRequest, "invalid-request").
		WithErrorKey("BadRequest").Build()
}

// errExpired refuses to resume an expired trial or free instance: expiry is
// for good; the platform deprovisions it.
func errExpired(at time.Time) error {
	return apiresponses.NewFailureResponseBuilder(
		fmt.Errorf("the instance expired at %s and cannot be resumed; deprovision it", at.UTC().Format(time.RFC3339)),
		http.StatusUnprocessableEntity, "instance-expired").WithErrorKey("InstanceExpired").Build()
}

// errRuntimeNotRunning refuses to change the parameters or plan of a
// runtime that does not run (suspended, failed), or that the same PATCH
// suspends: the change needs a live cluster to apply it to.
func errRuntimeNotRunning(state storage.RuntimeState) error {
	return apiresponses.NewFailureResponseBuilder(
		fmt.Errorf("the parameters and the plan of a runtime can change only while it runs (runtime state: %s, or suspended by this request); resume it first", state),
		http.StatusUnprocessableEntity, "runtime-not-running").WithErrorKey("UpdateNotSupported").Build()
}

// isOSBError reports whether err is one of the failures above, to be
// answered as it is.
func isOSBError(err error) bool {
	var f *apiresponses.FailureResponse
	return errors.As(err, &f)
}
