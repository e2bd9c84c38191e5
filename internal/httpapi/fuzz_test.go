package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/pivotal-cf/brokerapi/v10/domain"

	"github.com/kyma-keb/keb/internal/catalog"
)

// FuzzCheckInstanceBody: provision (PUT) and update (PATCH) bodies as
// brokerapi will decode them. An accepted body is one JSON object with
// exact, unique field names, naming an offered service (and for a PUT an
// offered plan).
func FuzzCheckInstanceBody(f *testing.F) {
	o := catalogOffering(f)
	services := o.services
	f.Add(true, []byte(`{"service_id":"`+catalog.ServiceID+`","plan_id":"`+services[0].Plans[0].ID+`"}`))
	f.Fuzz(func(t *testing.T, put bool, body []byte) {
		method := http.MethodPatch
		if put {
			method = http.MethodPut
		}
		// The one-decode path accepts only what the step-by-step checks
		// accept, with the same IDs, and refuses nothing they accept.
		fastService, fastPlan, _, ok := decodeWellFormedBody(method, body)
		slowService, slowPlan, slowErr := diagnoseInstanceBody(method, body)
		if ok && (slowErr != nil || fastService != slowService || fastPlan != slowPlan) {
			t.Fatalf("one-decode path accepted %q (%s, %s), the checks say %v (%s, %s)", body, fastService, fastPlan, slowErr, slowService, slowPlan)
		}
		if !ok && slowErr == nil && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
			t.Fatalf("one-decode path refused %q, which the checks accept", body)
		}
		decoded, rerr := o.checkInstanceBody(method, body)
		if rerr != nil {
			if rerr.status != http.StatusBadRequest || rerr.description == "" {
				t.Fatalf("refusal %+v", rerr)
			}
			return
		}
		var fields map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
			t.Fatalf("accepted a body that is not one object: %q", body)
		}
		for k := range fields {
			for _, want := range osbBodyFields {
				if k != want && strings.EqualFold(k, want) {
					t.Fatalf("accepted case variant %q", k)
				}
			}
		}
		if _, dup := duplicateKeyByTokens(body); dup {
			t.Fatalf("accepted duplicate keys: %q", body)
		}
		var d domain.ProvisionDetails
		if err := json.Unmarshal(body, &d); put && err != nil {
			t.Fatalf("accepted a body brokerapi cannot decode: %v", err)
		}
		if _, ok := o.service(d.ServiceID); !ok {
			t.Fatalf("accepted service %q", d.ServiceID)
		}
		// The details serveProvision answers from are brokerapi's.
		if decoded != nil && (!put || !reflect.DeepEqual(*decoded, d)) {
			t.Fatalf("decoded %+v, brokerapi decodes %+v (PUT %v)", *decoded, d, put)
		}
	})
}

// bindFields are the bind body's fields at the levels brokerapi decodes,
// spelt as OSB spells them.
var bindFields = map[string][]string{
	"":              {"app_guid", "plan_id", "service_id", "bind_resource", "context", "parameters"},
	"bind_resource": {"app_guid", "space_guid", "route", "credential_client_id", "backup_agent"},
}

// FuzzCheckBindingBody: bind (PUT) bodies as brokerapi will decode them. An
// accepted body is one JSON object, with unique keys, no case variant of a
// field brokerapi reads (at the top and in bind_resource), and an offered
// service and plan.
func FuzzCheckBindingBody(f *testing.F) {
	o := catalogOffering(f)
	services := o.services
	f.Add([]byte(`{"service_id":"` + catalog.ServiceID + `","plan_id":"` + services[0].Plans[0].ID + `","parameters":{"expiration_seconds":600}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if rerr := o.checkBindingBody(body); rerr != nil {
			if rerr.status != http.StatusBadRequest || rerr.description == "" {
				t.Fatalf("refusal %+v", rerr)
			}
			return
		}
		var fields map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
			t.Fatalf("accepted a body that is not one object: %q", body)
		}
		if _, dup := duplicateKeyByTokens(body); dup {
			t.Fatalf("accepted duplicate keys: %q", body)
		}
		var resource map[string]json.RawMessage
		_ = json.Unmarshal(fields["bind_resource"], &resource)
		for level, obj := range map[string]map[string]json.RawMessage{"": fields, "bind_resource": resource} {
			for k := range obj {
				for _, want := range bindFields[level] {
					if k != want && strings.EqualFold(k, want) {
						t.Fatalf("accepted case variant %q of %s", k, want)
					}
				}
			}
		}
		var d domain.BindDetails
		if err := json.Unmarshal(body, &d); err != nil {
			t.Fatalf("accepted a body brokerapi cannot decode: %v", err)
		}
		if o.checkServiceAndPlan(d.ServiceID, d.PlanID) != nil || d.PlanID == "" {
			t.Fatalf("accepted service %q, plan %q", d.ServiceID, d.PlanID)
		}
	})
}

// catalogOffering is what keb offers with its embedded plans (azure and
// trial enabled).
func catalogOffering(f *testing.F) offering {
	f.Helper()
	cat, err := catalog.Load("")
	if err != nil {
		f.Fatal(err)
	}
	services, err := cat.Services([]string{"azure", "trial"})
	if err != nil {
		f.Fatal(err)
	}
	return offering{services: services}
}
