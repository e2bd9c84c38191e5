package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/tidwall/gjson"

	"github.com/kyma-keb/keb/internal/strictjson"
)

// requestError is a client mistake found before brokerapi sees the request,
// answered with an OSB error body.
type requestError struct {
	status      int
	key         string
	description string
}

func (e *requestError) Error() string { return e.description }

func badRequest(format string, args ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, key: "BadRequest", description: fmt.Sprintf(format, args...)}
}

// offering is what a request may name: the catalog's service and plan IDs.
type offering struct {
	services []domain.Service
}

func (o offering) serviceIDs() []string {
	ids := make([]string, len(o.services))
	for i, s := range o.services {
		ids[i] = s.ID
	}
	return ids
}

func (o offering) service(id string) (domain.Service, bool) {
	for _, s := range o.services {
		if s.ID == id {
			return s, true
		}
	}
	return domain.Service{}, false
}

// checkServiceAndPlan names an unknown service or plan together with the
// values that would be accepted. planID "" is not checked.
func (o offering) checkServiceAndPlan(serviceID, planID string) *requestError {
	svc, ok := o.service(serviceID)
	if !ok {
		return badRequest("service_id %s is not offered; the catalog offers service_id %s",
			quoteValue(serviceID), strings.Join(o.serviceIDs(), ", "))
	}
	if planID == "" {
		return nil
	}
	var plans []string
	for _, p := range svc.Plans {
		if p.ID == planID {
			return nil
		}
		plans = append(plans, p.ID+" ("+p.Name+")")
	}
	return badRequest("plan_id %s is not a plan of service %s; its plans are: %s",
		quoteValue(planID), serviceID, strings.Join(plans, ", "))
}

// quoteValue shows a client's value in a description, shortened so that a
// hostile one cannot make the answer (or a log line) huge.
func quoteValue(s string) string {
	const most = 80
	if len(s) > most {
		return fmt.Sprintf("%q… (%d bytes)", s[:most], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// osbBodyFields are the top-level fields of OSB provision and update
// bodies. encoding/json (and so brokerapi) matches keys case-insensitively:
// a key differing from one of these only in case would be read as it, so
// such keys are refused rather than guessed at.
var osbBodyFields = []string{"service_id", "plan_id", "organization_guid", "space_guid", "context", "parameters",
	"maintenance_info", "previous_values"}

// checkInstanceBody validates a PUT (provision) or PATCH (update) body the
// way OSB asks and brokerapi does not: exactly one JSON object, field names
// exact, service_id (and for a PUT plan_id) present and offered. It returns
// nil when brokerapi can decode the body into details without surprise;
// then a PUT's details are the body decoded as brokerapi decodes it, when it
// took the well-formed path (nil otherwise).
func (o offering) checkInstanceBody(method string, body []byte) (*domain.ProvisionDetails, *requestError) {
	serviceID, planID, details, ok := decodeWellFormedBody(method, body)
	if !ok {
		details = nil
		var rerr *requestError
		if serviceID, planID, rerr = diagnoseInstanceBody(method, body); rerr != nil {
			return nil, rerr
		}
	}
	var missing []string
	if serviceID == "" {
		missing = append(missing, "service_id")
	}
	if planID == "" && method == http.MethodPut {
		missing = append(missing, "plan_id")
	}
	if len(missing) > 0 {
		return nil, badRequest("missing or empty: %s", strings.Join(missing, ", "))
	}
	if rerr := o.checkServiceAndPlan(serviceID, planID); rerr != nil {
		return nil, rerr
	}
	return details, nil
}

// decodeWellFormedBody is the path of the bodies platforms send: it decodes
// the body once, as brokerapi will, and checks in place (gjson) what that
// decoding cannot see: no duplicate keys, no case variants of OSB's fields.
// ok is false for any body with a flaw; diagnoseInstanceBody then names it.
// A PUT's decoded details are returned for serveProvision.
func decodeWellFormedBody(method string, body []byte) (serviceID, planID string, details *domain.ProvisionDetails, ok bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "", "", nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if method == http.MethodPatch {
		var d domain.UpdateDetails
		if dec.Decode(&d) != nil {
			return "", "", nil, false
		}
		serviceID, planID = d.ServiceID, d.PlanID
	} else {
		details = &domain.ProvisionDetails{}
		if dec.Decode(details) != nil {
			return "", "", nil, false
		}
		serviceID, planID = details.ServiceID, details.PlanID
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", "", nil, false
	}
	if _, dup := strictjson.DuplicateKey(body); dup {
		return "", "", nil, false
	}
	variant := false
	gjson.ParseBytes(body).ForEach(func(k, _ gjson.Result) bool {
		key := strictjson.ObjectKey(k)
		for _, want := range osbBodyFields {
			if key != want && strings.EqualFold(key, want) {
				variant = true
			}
		}
		return !variant
	})
	return serviceID, planID, details, !variant
}

// diagnoseInstanceBody checks a body that decodeWellFormedBody refused, one
// concern at a time, and names the first flaw it finds.
func diagnoseInstanceBody(method string, body []byte) (serviceID, planID string, rerr *requestError) {
	fields, rerr := decodeSingleObject(body)
	if rerr != nil {
		return "", "", rerr
	}
	var variants []string
	for k := range fields {
		for _, want := range osbBodyFields {
			if k != want && strings.EqualFold(k, want) {
				variants = append(variants, fmt.Sprintf("%s (did you mean %s? field names are case-sensitive)", quoteValue(k), want))
			}
		}
	}
	if len(variants) > 0 {
		sort.Strings(variants)
		return "", "", badRequest("unknown fields %s", strings.Join(variants, ", "))
	}
	// Decode as brokerapi will, so that a wrong type is a 400 naming the
	// field rather than brokerapi's 422.
	var details any = &domain.ProvisionDetails{}
	if method == http.MethodPatch {
		details = &domain.UpdateDetails{}
	}
	if err := json.Unmarshal(body, details); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return "", "", badRequest("field %s must be of JSON type %s, not %s", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		return "", "", badRequest("the body is not a valid OSB request: %v", err)
	}
	switch d := details.(type) {
	case *domain.ProvisionDetails:
		serviceID, planID = d.ServiceID, d.PlanID
	case *domain.UpdateDetails:
		serviceID, planID = d.ServiceID, d.PlanID
	}
	return serviceID, planID, nil
}

// bindDetails is what brokerapi decodes a bind body into.
var bindDetails = reflect.TypeFor[domain.BindDetails]()

// checkBindingBody validates a bind (PUT) body as checkInstanceBody does a
// provision body: exactly one JSON object, field names exact (at every level
// brokerapi decodes, "PARAMETERS" is no "parameters") and unique, service_id
// and plan_id present and offered. Whether the plan is the instance's and
// bindable the binding service decides.
func (o offering) checkBindingBody(body []byte) *requestError {
	if _, rerr := decodeSingleObject(body); rerr != nil {
		return rerr
	}
	if p := strictjson.Check(body, strictjson.Rules{Type: bindDetails}); p != nil {
		return badRequest("field %s %s", quoteValue(p.Path), p.Msg)
	}
	var d domain.BindDetails
	if err := json.Unmarshal(body, &d); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return badRequest("field %s must be of JSON type %s, not %s", typeErr.Field, typeErr.Type, typeErr.Value)
		}
		return badRequest("the body is not a valid OSB bind request: %v", err)
	}
	var missing []string
	if d.ServiceID == "" {
		missing = append(missing, "service_id")
	}
	if d.PlanID == "" {
		missing = append(missing, "plan_id")
	}
	if len(missing) > 0 {
		return badRequest("missing or empty: %s", strings.Join(missing, ", "))
	}
	return o.checkServiceAndPlan(d.ServiceID, d.PlanID)
}

// decodeSingleObject reads body as exactly one JSON object: OSB bodies are
// objects, and trailing data means the client sent something else than it
// thinks.
func decodeSingleObject(body []byte) (map[string]json.RawMessage, *requestError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badRequest("the body is empty; OSB requires a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		return nil, badRequest("the body is not a JSON object: %v", err)
	}
	if fields == nil {
		return nil, badRequest("the body is null; OSB requires a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, badRequest("the body has data after its JSON object (at byte %d)", dec.InputOffset())
	}
	if path, dup := strictjson.DuplicateKey(body); dup {
		return nil, badRequest("the body names field %s twice; parsers disagree on which one counts", quoteValue(path))
	}
	return fields, nil
}

// checkDeleteQuery demands what OSB requires of a DELETE of an instance or
// a binding: service_id and plan_id, both offered. Whether the plan is the
// instance's the broker decides, which knows the instance.
func (o offering) checkDeleteQuery(q map[string][]string) *requestError {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	var missing []string
	for _, k := range []string{"service_id", "plan_id"} {
		if get(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return badRequest("missing query parameters: %s (OSB requires both on a DELETE)", strings.Join(missing, ", "))
	}
	return o.checkServiceAndPlan(get("service_id"), get("plan_id"))
}

// guardOSB answers the client mistakes brokerapi would answer in its own
// shape (or not at all) before it sees the request: bodies over maxBody
// (413), malformed or ambiguous bodies and missing or unknown IDs (400).
func guardOSB(o offering, maxBody int64) func(http.Handler) http.Handler {
	limits := bodyLimits{max: maxBody}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			route := osbRouteOf(req.URL.Path)
			body, ok := readBody(w, req, limits)
			if !ok {
				return
			}
			if body != nil {
				req.Body = io.NopCloser(bytes.NewReader(body))
			}
			var rerr *requestError
			switch {
			case route == routeInstance && (req.Method == http.MethodPut || req.Method == http.MethodPatch):
				if body == nil {
					rerr = badRequest("the body is empty; OSB requires a JSON object")
					break
				}
				var details *domain.ProvisionDetails
				if details, rerr = o.checkInstanceBody(req.Method, body); details != nil {
					// Decoded once: serveProvision takes it from here.
					req = req.WithContext(context.WithValue(req.Context(), provisionDetailsKey{}, details))
				}
			case route == routeBinding && req.Method == http.MethodPut:
				if body == nil {
					rerr = badRequest("the body is empty; OSB requires a JSON object")
				} else {
					rerr = o.checkBindingBody(body)
				}
			case (route == routeInstance || route == routeBinding) && req.Method == http.MethodDelete:
				rerr = o.checkDeleteQuery(req.URL.Query())
			}
			if rerr != nil {
				writeError(w, rerr.status, rerr.key, rerr.description)
				return
			}
			next.ServeHTTP(w, req)
		})
	}
}

// OSB routes, as guardOSB tells them apart.
const (
	routeInstance = iota + 1
	routeBinding
	routePoll
)

func osbRouteOf(path string) int {
	switch {
	case strings.HasSuffix(path, "/last_operation"):
		return routePoll
	case strings.Contains(path, "/service_bindings/"):
		return routeBinding
	case strings.Contains(path, "/service_instances/"):
		return routeInstance
	}
	return 0
}

// osbErrorShape makes every error brokerapi writes itself an OSB error
// body: brokerapi answers some failures with only a description. keb's
// own failures already carry their error key; 410's empty object is the
// spec's and is left alone.
func osbErrorShape(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sw := &shapeWriter{ResponseWriter: w}
		next.ServeHTTP(sw, req)
		sw.flush()
	})
}

type shapeWriter struct {
	http.ResponseWriter
	status int
	buf    *bytes.Buffer
}

func (s *shapeWriter) WriteHeader(code int) {
	if s.status != 0 {
		return
	}
	s.status = code
	if code >= 400 && code != http.StatusGone {
		s.buf = &bytes.Buffer{}
		return
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *shapeWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	if s.buf != nil {
		return s.buf.Write(b)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (s *shapeWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *shapeWriter) flush() {
	if s.buf == nil {
		return
	}
	var body map[string]any
	if err := json.Unmarshal(s.buf.Bytes(), &body); err != nil || body == nil {
		body = map[string]any{"description": strings.TrimSpace(s.buf.String())}
	}
	if key, _ := body["error"].(string); key == "" {
		body["error"] = errorKeyFor(s.status)
	}
	if d, _ := body["description"].(string); d == "" {
		body["description"] = http.StatusText(s.status)
	}
	s.Header().Del("Content-Length")
	s.Header().Set("Content-Type", "application/json")
	s.ResponseWriter.WriteHeader(s.status)
	_ = json.NewEncoder(s.ResponseWriter).Encode(body)
}

// errorKeyFor is the error key of a status: its reason phrase without
// spaces, as keb's own keys are spelled ("PreconditionFailed").
func errorKeyFor(status int) string {
	words := strings.Fields(http.StatusText(status))
	if len(words) == 0 {
		return "Error"
	}
	return strings.Join(words, "")
}
