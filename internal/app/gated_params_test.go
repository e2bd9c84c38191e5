package app_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestGatedParametersAsUpstreamShipsThem: out of the box ingressFiltering is offered on aws, azure
// and gcp only (upstream's shipped ingressFilteringPlans; keb offered it on nine plans), and
// accessControlList and additionalVolumeSizeGi on none; each is refused with a 400 naming the plan
// elsewhere. An instance that stored them when its plan offered them keeps working: a PATCH that
// leaves them as they are is accepted, one that changes them is refused.
func TestGatedParametersAsUpstreamShipsThem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cat := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	created := map[string]map[string]any{}
	for _, p := range cat.body["services"].([]any)[0].(map[string]any)["plans"].([]any) {
		plan := p.(map[string]any)
		schema := plan["schemas"].(map[string]any)["service_instance"].(map[string]any)["create"].(map[string]any)["parameters"].(map[string]any)
		created[plan["name"].(string)] = schema["properties"].(map[string]any)
	}
	for _, plan := range []string{"aws", "azure", "gcp", "azure_lite", "build-runtime-aws", "build-runtime-gcp", "build-runtime-azure"} {
		props, listed := created[plan]
		if !listed {
			t.Fatalf("catalog: no plan %s", plan)
		}
		if _, offered := props["ingressFiltering"]; offered != (plan == "aws" || plan == "azure" || plan == "gcp") {
			t.Errorf("catalog: %s offers ingressFiltering: %v", plan, offered)
		}
		for _, p := range []string{"accessControlList", "additionalVolumeSizeGi"} {
			if _, offered := props[p]; offered {
				t.Errorf("catalog: %s offers %s", plan, p)
			}
		}
	}
	for _, tc := range []struct{ planID, params, want string }{
		{azureLitePlanID, `{"name":"c1","ingressFiltering":false}`, "ingressFiltering is not available on plan azure_lite"},
		{azurePlanID, `{"name":"c1","accessControlList":{"allowedCIDRs":[]}}`, "accessControlList is not available on plan azure"},
		{azurePlanID, `{"name":"c1","additionalVolumeSizeGi":10}`, "additionalVolumeSizeGi is not available on plan azure"},
	} {
		r := b.do(http.MethodPut, provisionPath("gated-new"), provisionBody(tc.planID, tc.params, baseCtx))
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if d, _ := r.body["description"].(string); !strings.Contains(d, tc.want) {
			t.Errorf("PUT %s: %s, want %q", tc.params, r.raw, tc.want)
		}
	}

	// An azure_lite instance provisioned when its plan offered all three.
	b.running("gated-1")
	b.exec(`UPDATE instances SET plan_id = $1, plan_name = 'azure_lite', parameters = $2 WHERE instance_id = 'gated-1'`, azureLitePlanID,
		`{"name":"c1","ingressFiltering":true,"accessControlList":{"allowedCIDRs":["203.0.113.0/24"]},"additionalVolumeSizeGi":10}`)
	for _, params := range []string{`{"autoScalerMax":8}`,
		`{"ingressFiltering":true,"accessControlList":{"allowedCIDRs":["203.0.113.0/24"]},"additionalVolumeSizeGi":10,"autoScalerMax":9}`} {
		op := b.accepted(b.do(http.MethodPatch, provisionPath("gated-1"), `{"service_id":"`+serviceID+`","parameters":`+params+`}`))
		b.finish(op, "succeeded")
	}
	for _, tc := range []struct{ params, want string }{
		{`{"ingressFiltering":false}`, "ingressFiltering is not available on plan azure_lite"},
		{`{"accessControlList":{"allowedCIDRs":[]}}`, "accessControlList is not available on plan azure_lite"},
		{`{"additionalVolumeSizeGi":20}`, "additionalVolumeSizeGi is not available on plan azure_lite"},
	} {
		r := b.do(http.MethodPatch, provisionPath("gated-1"), `{"service_id":"`+serviceID+`","parameters":`+tc.params+`}`)
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if d, _ := r.body["description"].(string); !strings.Contains(d, tc.want) {
			t.Errorf("PATCH %s: %s, want %q", tc.params, r.raw, tc.want)
		}
	}
}

// TestDualStackAndAuditLogAccessAsUpstream: networking.dualStack is in the AWS plans' create form
// (linking to the configured docs page) and accepted there, recorded with the instance; on
// azure a 400 names it. auditLogAccess and gvisor, which upstream's shipped settings offer on no
// plan, are in no form; auditLogAccess is accepted and ignored by a paid plan's PUT and PATCH and
// refused on trial with a 400 (gvisor's answers: TestGVisorForAllowedAccounts).
func TestDualStackAndAuditLogAccessAsUpstream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cat := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	networking := map[string]map[string]any{}
	for _, p := range cat.body["services"].([]any)[0].(map[string]any)["plans"].([]any) {
		plan := p.(map[string]any)
		schema := plan["schemas"].(map[string]any)["service_instance"].(map[string]any)["create"].(map[string]any)["parameters"].(map[string]any)
		props := schema["properties"].(map[string]any)
		for _, gated := range []string{"auditLogAccess", "gvisor"} {
			if _, offered := props[gated]; offered {
				t.Errorf("catalog: %s offers %s; upstream's shipped settings offer it on no plan", plan["name"], gated)
			}
		}
		if n, ok := props["networking"].(map[string]any); ok {
			networking[plan["name"].(string)] = n["properties"].(map[string]any)
		}
	}
	ds, _ := networking["aws"]["dualStack"].(map[string]any)
	if d, _ := ds["description"].(string); !strings.Contains(d, "https://help.sap.com/") {
		t.Errorf("catalog: aws networking.dualStack is %v, want a boolean whose description links to the docs", ds)
	}
	if _, offered := networking["azure"]["dualStack"]; offered {
		t.Error("catalog: azure offers networking.dualStack; upstream's providers data gives it to AWS only")
	}

	b.expect(b.do(http.MethodPut, provisionPath("ds-aws"), provisionBody(awsPlanID,
		`{"name":"c1","networking":{"nodes":"10.180.0.0/16","dualStack":true},"auditLogAccess":true}`, baseCtx)), http.StatusAccepted)
	if _, params := b.recorded("ds-aws"); !strings.Contains(params, `"dualStack": true`) {
		t.Errorf("recorded parameters %s, want networking.dualStack", params)
	}
	for _, tc := range []struct{ planID, params, want string }{
		{azurePlanID, `{"name":"c1","networking":{"nodes":"10.180.0.0/16","dualStack":true}}`, "networking.dualStack"},
		{trialPlanID, `{"name":"c1","auditLogAccess":false}`, "auditLogAccess is not available on plan trial"},
	} {
		r := b.do(http.MethodPut, provisionPath("ds-refused"), provisionBody(tc.planID, tc.params, baseCtx))
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if d, _ := r.body["description"].(string); !strings.Contains(d, tc.want) {
			t.Errorf("PUT %s: %s, want %q", tc.params, r.raw, tc.want)
		}
	}
	b.running("audit-1")
	op := b.accepted(b.do(http.MethodPatch, provisionPath("audit-1"), `{"service_id":"`+serviceID+`","parameters":{"auditLogAccess":true,"autoScalerMax":9}}`))
	b.finish(op, "succeeded")
}
