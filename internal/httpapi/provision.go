package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"code.cloudfoundry.org/lager/v3"
	"github.com/google/uuid"
	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/pivotal-cf/brokerapi/v10/domain/apiresponses"

	"github.com/kyma-keb/keb/internal/logging"
)

// provisionDetailsKey holds, in a PUT's context, the body guardOSB decoded
// and checked (*domain.ProvisionDetails).
type provisionDetailsKey struct{}

// serveProvision answers a PUT of an instance whose body guardOSB already
// decoded, as brokerapi's Provision handler answers it, without brokerapi:
// the body is decoded once, and the accept skips brokerapi's router, its
// five context middlewares (a correlation UUID per request among them) and
// its logger session. Every other request, and a PUT whose body took
// guardOSB's step-by-step path, goes to next (brokerapi). brokerapi's own
// checks of a PUT are guardOSB's already: service_id and plan_id present
// and in the catalog, X-Broker-API-Version 2.x (checkAPIVersion).
func serveProvision(b domain.ServiceBroker, logger lager.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		details, ok := req.Context().Value(provisionDetailsKey{}).(*domain.ProvisionDetails)
		if !ok || req.Method != http.MethodPut {
			next.ServeHTTP(w, req)
			return
		}
		instanceID := instanceIDOf(req)
		requestIdentity := req.Header.Get(headerRequestIdentity)
		// brokerapi reads req.FormValue, which for a JSON body is the query's.
		async := req.URL.Query().Get("accepts_incomplete") == "true"
		res, err := b.Provision(req.Context(), instanceID, *details, async)
		if err != nil {
			// Logged as brokerapi logs it: its session, the request's details
			// (the lager bridge redacts them).
			correlationID := correlationIDOf(req)
			log := logger.Session("provision", lager.Data{"instance-id": instanceID},
				lager.Data{"correlation-id": correlationID, "requestIdentity": requestIdentity}).
				WithData(lager.Data{"instance-details": *details})
			switch err := err.(type) {
			case *apiresponses.FailureResponse:
				log.Error(err.LoggerAction(), err)
				respondOSB(w, err.ValidatedStatusCode(log), requestIdentity, err.ErrorResponse())
			default:
				log.Error("unknown-error", err)
				respondOSB(w, http.StatusInternalServerError, requestIdentity, apiresponses.ErrorResponse{Description: err.Error()})
			}
			return
		}
		var metadata any
		if !res.Metadata.IsEmpty() {
			metadata = res.Metadata
		}
		switch {
		case res.AlreadyExists:
			respondOSB(w, http.StatusOK, requestIdentity, apiresponses.ProvisioningResponse{
				DashboardURL: res.DashboardURL, Metadata: metadata})
		case res.IsAsync:
			respondOSB(w, http.StatusAccepted, requestIdentity, apiresponses.ProvisioningResponse{
				DashboardURL: res.DashboardURL, OperationData: res.OperationData, Metadata: metadata})
		default:
			respondOSB(w, http.StatusCreated, requestIdentity, apiresponses.ProvisioningResponse{
				DashboardURL: res.DashboardURL, Metadata: metadata})
		}
	})
}

// instanceIDOf is the {instance_id} segment of a /v2/service_instances/{id}
// path as brokerapi's router (chi) reads it: from the raw path when the
// request has one, still escaped.
func instanceIDOf(req *http.Request) string {
	p := req.URL.RawPath
	if p == "" {
		p = req.URL.Path
	}
	const seg = "/service_instances/"
	return p[strings.LastIndex(p, seg)+len(seg):]
}

// correlationHeaders are the headers brokerapi takes a request's correlation
// ID from, in its order.
var correlationHeaders = []string{"X-Correlation-ID", "X-CorrelationID", "X-ForRequest-ID", "X-Request-ID", "X-Vcap-Request-Id"}

// correlationIDOf is the correlation ID brokerapi would log for req: keb's
// request ID, which stripToV2 hands brokerapi as X-Correlation-ID.
func correlationIDOf(req *http.Request) string {
	if id := logging.RequestID(req.Context()); id != "" {
		return id
	}
	for _, h := range correlationHeaders {
		if v := req.Header.Get(h); v != "" {
			return v
		}
	}
	return uuid.NewString()
}

// respondOSB writes an answer as brokerapi does.
func respondOSB(w http.ResponseWriter, status int, requestIdentity string, body any) {
	w.Header().Set("Content-Type", "application/json")
	if requestIdentity != "" {
		w.Header().Set(headerRequestIdentity, requestIdentity)
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}
