package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

const (
	awsPlanID       = "361c511f-f939-4621-b228-d0fb79a1fe15"
	azureLitePlanID = "8cb22518-aa26-44c5-91a0-e669ec9bf443"
)

// updateBody is an OSB update request with parameters, and a plan when
// planID is not "".
func updateBody(planID, params string) string {
	s := `{"service_id":"` + serviceID + `","context":{}`
	if planID != "" {
		s += `,"plan_id":"` + planID + `"`
	}
	if params != "" {
		s += `,"parameters":` + params
	}
	return s + `}`
}

// recorded is what the instance records as the platform asked for it.
func (b *bundle) recorded(id string) (planName, parameters string) {
	b.t.Helper()
	if err := b.pool.QueryRow(b.ctx(), `SELECT plan_name, parameters::text FROM instances WHERE instance_id = $1`, id).
		Scan(&planName, &parameters); err != nil {
		b.t.Fatal(err)
	}
	return planName, parameters
}

// TestUpdateParametersFrontDoor: every rule a PATCH of parameters or plan
// meets at the front door, on a real database: 400s naming the field or both
// plans, 422s as OSB asks, and a 202 whose operation carries the change while
// the instance keeps its recorded parameters (no engine runs here).
func TestUpdateParametersFrontDoor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-1")
	prov := b.expect(b.do(http.MethodPut, provisionPath("trial-1"), provisionBody(trialPlanID, `{"name":"t1"}`,
		`"globalaccount_id":"ga-t","subaccount_id":"sa-t","user_id":"u@example.com"`)), http.StatusAccepted)
	b.provisioned("trial-1", prov.body["operation"].(string), "rt-t", "")

	refused := []struct {
		name, instance, body string
		status               int
		key                  string
		inDescription        []string
	}{
		{name: "colocated control plane", instance: "inst-1", body: updateBody("", `{"colocateControlPlane":true}`), status: 400, key: "BadRequest",
			inDescription: []string{"colocateControlPlane cannot be changed on a running runtime"}},
		{name: "region", instance: "inst-1", body: updateBody("", `{"region":"eastus"}`), status: 400, key: "BadRequest",
			inDescription: []string{"region cannot be changed"}},
		{name: "networking", instance: "inst-1", body: updateBody("", `{"networking":{"nodes":"10.250.0.0/16"}}`), status: 400, key: "BadRequest",
			inDescription: []string{"networking cannot be changed"}},
		{name: "above the plan's maximum", instance: "inst-1", body: updateBody("", `{"autoScalerMax":301}`), status: 400, key: "BadRequest",
			inDescription: []string{"autoScalerMax must be at most 300"}},
		{name: "min above max", instance: "inst-1", body: updateBody("", `{"autoScalerMin":12,"autoScalerMax":6}`), status: 400, key: "BadRequest",
			inDescription: []string{"autoScalerMin must not be greater than autoScalerMax (12 > 6)"}},
		{name: "max below the plan's default min", instance: "inst-1", body: updateBody("", `{"autoScalerMax":2}`), status: 400, key: "BadRequest",
			inDescription: []string{"autoScalerMax"}},
		{name: "unknown machine type", instance: "inst-1", body: updateBody("", `{"machineType":"m6i.large"}`), status: 400, key: "BadRequest",
			inDescription: []string{"machineType"}},
		{name: "create-only parameter", instance: "inst-1", body: updateBody("", `{"kymaVersion":"2.20.0"}`), status: 400, key: "BadRequest",
			inDescription: []string{"kymaVersion"}},
		{name: "trial has no autoscaler", instance: "trial-1", body: updateBody("", `{"autoScalerMax":2}`), status: 400, key: "BadRequest",
			inDescription: []string{"autoScalerMax"}},
		{name: "plan not upgradable", instance: "inst-1", body: updateBody(trialPlanID, ""), status: 400, key: "BadRequest",
			inDescription: []string{"plan azure cannot change to trial"}},
		{name: "trial to a plan not listed", instance: "trial-1", body: updateBody(azureLitePlanID, ""), status: 400, key: "BadRequest",
			inDescription: []string{"plan trial cannot change to azure_lite", "aws, azure, gcp"}},
		{name: "parameters with a suspension", instance: "inst-1", body: `{"service_id":"` + serviceID + `","context":{"active":false},"parameters":{"autoScalerMax":6}}`,
			status: 422, key: "UpdateNotSupported", inDescription: []string{"resume it first"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before := b.snapshot(tc.instance)
			plan, params := b.recorded(tc.instance)
			r := b.do(http.MethodPatch, provisionPath(tc.instance), tc.body)
			b.expectOSBError(r, tc.status, tc.key)
			for _, want := range tc.inDescription {
				if !strings.Contains(r.body["description"].(string), want) {
					t.Errorf("description %q lacks %q", r.body["description"], want)
				}
			}
			b.unchanged(tc.instance, before, "a refused PATCH")
			if p, ps := b.recorded(tc.instance); p != plan || ps != params {
				t.Errorf("a refused PATCH changed the recorded plan or parameters: %s %s", p, ps)
			}
		})
	}

	// Without accepts_incomplete: AsyncRequired, as for every PATCH.
	b.expectOSBError(b.do(http.MethodPatch, instancePath("inst-1"), updateBody("", `{"autoScalerMax":6}`)), 422, "AsyncRequired")

	// Accepted: an update operation carrying the merged parameters; the
	// instance records nothing until it succeeded.
	op := b.accepted(b.do(http.MethodPatch, provisionPath("inst-1"), updateBody("", `{"autoScalerMax":6,"machineType":"Standard_D8s_v5"}`)))
	stored := b.operation("inst-1", op)
	if stored.Type != storage.OperationTypeUpdate || stored.Request == nil || stored.Request.PlanName != "azure" {
		t.Fatalf("update operation %+v", stored)
	}
	var want map[string]any
	_ = json.Unmarshal(stored.Request.Parameters, &want)
	if want["autoScalerMax"] != 6.0 || want["machineType"] != "Standard_D8s_v5" || want["name"] != "c1" {
		t.Errorf("the update's parameters: %s", stored.Request.Parameters)
	}
	if _, params := b.recorded("inst-1"); params != `{"name": "c1"}` {
		t.Errorf("recorded parameters changed before the update ran: %s", params)
	}
	last := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation?operation="+op, ""), http.StatusOK)
	if last.body["state"] != "in progress" || !strings.Contains(last.body["description"].(string), "new parameters") {
		t.Errorf("last_operation %s", last.raw)
	}
	// While it runs: the same ConcurrencyError for another PATCH and GET.
	b.expectOSBError(b.do(http.MethodPatch, provisionPath("inst-1"), updateBody("", `{"autoScalerMax":7}`)), 422, "ConcurrencyError")
	b.expectOSBError(b.do(http.MethodGet, instancePath("inst-1"), ""), 422, "ConcurrencyError")

	// It fails: the recorded parameters stay, last_operation says so.
	b.finish(op, storage.OperationFailed)
	if _, params := b.recorded("inst-1"); params != `{"name": "c1"}` {
		t.Errorf("a failed update changed the recorded parameters: %s", params)
	}
	if st := b.runtimeStatus("inst-1"); st["state"] != "succeeded" {
		t.Errorf("a failed update moved the runtime to %v", st["state"])
	}

	// Parameters equal to the recorded ones: 200, nothing to run.
	ops := b.count(`SELECT count(*) FROM operations WHERE instance_id = 'inst-1'`)
	r := b.expect(b.do(http.MethodPatch, provisionPath("inst-1"), updateBody(azurePlanID, `{}`)), http.StatusOK)
	if r.body["operation"] != nil {
		t.Errorf("identical PATCH started %v", r.body["operation"])
	}
	if n := b.count(`SELECT count(*) FROM operations WHERE instance_id = 'inst-1'`); n != ops {
		t.Errorf("identical PATCH wrote an operation (%d → %d)", ops, n)
	}

	// A trial moves to aws: the operation names both plans.
	op = b.accepted(b.do(http.MethodPatch, provisionPath("trial-1"), updateBody(awsPlanID, `{"autoScalerMax":5}`)))
	stored = b.operation("trial-1", op)
	if stored.Request == nil || stored.Request.PlanID != awsPlanID || !strings.Contains(stored.Description, "from plan trial to plan aws") {
		t.Fatalf("plan change operation %+v", stored)
	}
	if plan, _ := b.recorded("trial-1"); plan != "trial" {
		t.Errorf("the plan changed before the update ran: %s", plan)
	}
}

// TestCatalogUpdateSchemas: the catalog a platform reads says which plans can
// change plan and what a PATCH may carry.
func TestCatalogUpdateSchemas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	plans := r.body["services"].([]any)[0].(map[string]any)["plans"].([]any)
	for _, p := range plans {
		plan := p.(map[string]any)
		update := plan["schemas"].(map[string]any)["service_instance"].(map[string]any)["update"].(map[string]any)["parameters"].(map[string]any)
		props := update["properties"].(map[string]any)
		_, scalable := props["autoScalerMax"]
		switch plan["name"] {
		case "trial":
			if plan["plan_updateable"] != true || scalable {
				t.Errorf("trial: plan_updateable %v, update properties %v", plan["plan_updateable"], props)
			}
		case "azure_lite":
			if plan["plan_updateable"] != true || !scalable {
				t.Errorf("azure_lite: plan_updateable %v, update properties %v", plan["plan_updateable"], props)
			}
		case "aws", "azure", "gcp":
			// They move to their build-runtime plans.
			if plan["plan_updateable"] != true || !scalable {
				t.Errorf("%s: plan_updateable %v, update properties %v", plan["name"], plan["plan_updateable"], props)
			}
		default:
			if plan["plan_updateable"] != false || !scalable {
				t.Errorf("%s: plan_updateable %v, update properties %v", plan["name"], plan["plan_updateable"], props)
			}
		}
		if _, ok := props["name"]; !ok {
			t.Errorf("%s: the update schema does not offer name", plan["name"])
		}
		if _, ok := props["region"]; ok {
			t.Errorf("%s: the update schema offers region", plan["name"])
		}
	}
}
