package app_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
)

// Issue 38, defect 1: whole numbers written as 20.0 passed the validator,
// were stored as sent and failed the typed decoding later (a failed
// provisioning, then a 500 to every PATCH). They are stored as integers,
// and an instance stored before the fix is still read.
func TestWholeNumbersStoredAsIntegers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	params := `{"name":"c1","autoScalerMin":3.0,"autoScalerMax":20.0,"volumeSizeGb":80.00,"maxSurge":1e0,` +
		`"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMin":30e-1,"autoScalerMax":5.0}]}`
	prov := b.expect(b.do(http.MethodPut, provisionPath("whole-1"), provisionBody(azurePlanID, params, baseCtx)), http.StatusAccepted)
	var stored string
	if err := b.pool.QueryRow(b.ctx(), `SELECT parameters::text FROM instances WHERE instance_id = $1`, "whole-1").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`[0-9][.eE]`).MatchString(stored) {
		t.Errorf("stored parameters keep a fraction or an exponent: %s", stored)
	}
	// The form the provisioning reads them in.
	var typed catalog.ProvisioningParameters
	dec := json.NewDecoder(strings.NewReader(stored))
	if err := dec.Decode(&typed); err != nil {
		t.Fatalf("stored parameters do not decode into the typed parameters: %v (%s)", err, stored)
	}
	if *typed.AutoScalerMax != 20 || *typed.VolumeSizeGb != 80 || *(*typed.AdditionalWorkerNodePools)[0].AutoScalerMin != 3 {
		t.Errorf("stored parameters read back as %+v", typed)
	}
	// The same PUT again is the same request (OSB: 202 for the same operation).
	again := b.expect(b.do(http.MethodPut, provisionPath("whole-1"), provisionBody(azurePlanID, params, baseCtx)), http.StatusAccepted)
	if again.body["operation"] != prov.body["operation"] {
		t.Errorf("the repeated PUT got operation %v, the first %v", again.body["operation"], prov.body["operation"])
	}

	// Instances stored before the fix, as sent: a running one updates, a
	// failed one answers as documented (422), neither a 500.
	b.running("whole-2")
	b.exec(`UPDATE instances SET parameters = '{"name":"c1","autoScalerMax":20.0,"volumeSizeGb":80.0}' WHERE instance_id = 'whole-2'`)
	b.accepted(b.do(http.MethodPatch, provisionPath("whole-2"), `{"service_id":"`+serviceID+`","parameters":{"autoScalerMax":25.0}}`))
	failed := b.expect(b.do(http.MethodPut, provisionPath("whole-3"), provisionBody(azurePlanID, `{"name":"c1"}`,
		`"globalaccount_id":"ga-3","subaccount_id":"sa-3","user_id":"u@example.com"`)), http.StatusAccepted)
	b.finish(failed.body["operation"].(string), "failed")
	b.exec(`UPDATE instances SET parameters = '{"name":"c1","autoScalerMax":20.0}' WHERE instance_id = 'whole-3'`)
	b.expectOSBError(b.do(http.MethodPatch, provisionPath("whole-3"), `{"service_id":"`+serviceID+`","parameters":{"autoScalerMax":25}}`),
		http.StatusUnprocessableEntity, "UpdateNotSupported")
}

// Issue 38, defect 2: a PATCH changing license_type to an external licence
// on an instance with ingress filtering was answered 200. The licence rules
// hold for the context after the PATCH, as a PUT with the pair is refused.
func TestLicenceCheckedAfterPatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	put := provisionBody(azurePlanID, `{"name":"c1","ingressFiltering":true}`, baseCtx+`,"license_type":"CUSTOMER"`)
	fresh := b.do(http.MethodPut, provisionPath("lic-0"), put)
	b.expectOSBError(fresh, http.StatusBadRequest, "BadRequest")

	prov := b.expect(b.do(http.MethodPut, provisionPath("lic-1"), provisionBody(azurePlanID, `{"name":"c1","ingressFiltering":true}`, baseCtx)),
		http.StatusAccepted)
	b.provisioned("lic-1", prov.body["operation"].(string), "rt-lic", "")
	before := b.snapshot("lic-1")
	for _, licence := range []string{"CUSTOMER", "partner"} {
		r := b.do(http.MethodPatch, provisionPath("lic-1"), patchBody(`"license_type":"`+licence+`"`))
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if d := r.body["description"].(string); !strings.Contains(d, "ingressFiltering is not available for instances with the external licence type") {
			t.Errorf("PATCH license_type %s: %s", licence, d)
		}
		b.unchanged("lic-1", before, "a refused licence change")
	}
	// Switching ingress filtering off in the same PATCH fits the new licence.
	r := b.do(http.MethodPatch, provisionPath("lic-1"), `{"service_id":"`+serviceID+`","context":{"license_type":"CUSTOMER"},"parameters":{"ingressFiltering":false}}`)
	b.accepted(r)
	// Without ingress filtering the licence may change on its own.
	b.running("lic-2")
	b.expect(b.do(http.MethodPatch, provisionPath("lic-2"), patchBody(`"license_type":"CUSTOMER"`)), http.StatusOK)
}

// Issue 38, defect 6: GET instance left out administrators, gvisor and
// modules, which the resolved form has no field for.
func TestGetInstanceShowsParametersAsSent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	params := `{"name":"c1","administrators":["admin@example.com"],"gvisor":{"enabled":false},"modules":{"list":[{"name":"istio"}]}}`
	prov := b.expect(b.do(http.MethodPut, provisionPath("get-1"), provisionBody(azurePlanID, params, baseCtx)), http.StatusAccepted)
	b.provisioned("get-1", prov.body["operation"].(string), "rt-get", `{"name":"c1","region":"westeurope","autoScalerMax":20}`)
	got := b.expect(b.do(http.MethodGet, instancePath("get-1"), ""), http.StatusOK)
	shown, _ := got.body["parameters"].(map[string]any)
	checkRecorded(t, mustJSON(t, shown), map[string]string{
		"administrators": `["admin@example.com"]`, "gvisor": `{"enabled":false}`, "modules": `{"list":[{"name":"istio"}]}`,
		"region": `"westeurope"`, "autoScalerMax": `20`,
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
