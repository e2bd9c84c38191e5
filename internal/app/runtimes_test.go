package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/auth"
)

// seedListing writes two live instances (one with sealed credentials) and one
// archived instance straight into the tables. The instances' state and
// shoot_name are what the store would have written with their operations.
func seedListing(b *bundle) {
	b.t.Helper()
	b.exec(`INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id, user_id, service_id,
		plan_id, plan_name, platform_region, provider, provider_region, parameters, context, encrypted_credentials, created_at,
		state, shoot_name)
		VALUES ('inst-1', 'rt-1', 'ga-1', 'sa-1', 'user@example.com', $1, $2, 'azure', 'cf-eu10', 'azure', 'westeurope',
			'{"name":"c1"}', '{"sm_operator_credentials":"leak?"}', 'SEALED-SECRET', now() - interval '2 hours',
			'succeeded', 'c-1'),
		('inst-2', 'rt-2', 'ga-2', 'sa-2', 'other@example.com', $1, $2, 'azure', 'cf-us10', 'azure', 'eastus',
			'{"name":"c2"}', '{}', NULL, now() - interval '1 hour', 'failed', '')`, serviceID, azurePlanID)
	b.exec(`INSERT INTO operations (operation_id, instance_id, type, state, description, finished_stages, deadline, data)
		VALUES ('op-1', 'inst-1', 'provision', 'succeeded', 'done', '{create_runtime}', now(), '{"shootName":"c-1"}'),
		('op-2', 'inst-2', 'provision', 'failed', 'broke', '{}', now(), '{}')`)
	b.exec(`UPDATE operations SET error_message = 'it broke' WHERE operation_id = 'op-2'`)
	b.exec(`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id, plan_name,
		platform_region, provider, provider_region, shoot_name, last_deprovisioning_id, instance_created_at, deprovisioning_started_at)
		VALUES ('inst-0', 'rt-0', 'ga-1', 'sa-1', $1, 'azure', 'cf-eu10', 'azure', 'westeurope', 'c-0', 'deprov-0',
			now() - interval '3 hours', now() - interval '30 minutes')`, azurePlanID)
}

func dataIDs(r response) []string {
	var out []string
	for _, d := range r.body["data"].([]any) {
		out = append(out, d.(map[string]any)["instanceID"].(string))
	}
	return out
}

func TestRuntimesEndpointAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name   string
		path   string
		opts   []reqOpt
		status int
	}{
		{name: "no token", path: "/info/runtimes", opts: []reqOpt{withoutHeader("Authorization")}, status: http.StatusUnauthorized},
		{name: "broker:write only", path: "/info/runtimes", opts: []reqOpt{withHeader("Authorization", "Bearer "+b.mint(auth.ScopeBrokerWrite))}, status: http.StatusForbidden},
		{name: "cld:read", path: "/info/runtimes", opts: []reqOpt{withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))}, status: http.StatusOK},
		{name: "alias no token", path: "/runtimes", opts: []reqOpt{withoutHeader("Authorization")}, status: http.StatusUnauthorized},
		{name: "alias broker:write only", path: "/runtimes", opts: []reqOpt{withHeader("Authorization", "Bearer "+b.mint(auth.ScopeBrokerWrite))}, status: http.StatusForbidden},
		{name: "alias cld:read", path: "/runtimes", opts: []reqOpt{withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))}, status: http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(http.MethodGet, tc.path, "", tc.opts...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if tc.status != http.StatusOK && (r.body["error"] == nil || r.body["description"] == "") {
				t.Fatalf("want an OSB error body, got %s", r.raw)
			}
		})
	}
}

func TestRuntimesEndpointShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedListing(b)
	r := b.expect(b.do(http.MethodGet, "/info/runtimes?account=ga-1&account=ga-2", ""), http.StatusOK)
	if r.body["count"] != float64(2) || r.body["totalCount"] != float64(2) || r.body["next"] != nil {
		t.Fatalf("count/totalCount/next wrong: %s", r.raw)
	}
	if strings.Contains(r.raw, "SEALED-SECRET") || strings.Contains(r.raw, "sm_operator_credentials") {
		t.Fatalf("listing exposes credentials: %s", r.raw)
	}
	first := r.body["data"].([]any)[0].(map[string]any)
	want := map[string]any{
		"instanceID": "inst-1", "runtimeID": "rt-1", "globalAccountID": "ga-1", "subAccountID": "sa-1",
		"region": "westeurope", "subAccountRegion": "cf-eu10", "shootName": "c-1", "serviceClassID": serviceID,
		"serviceClassName": "kymaruntime", "servicePlanID": azurePlanID, "servicePlanName": "azure",
		"provider": "azure", "userID": "user@example.com",
	}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	if p, _ := first["parameters"].(map[string]any); p["name"] != "c1" {
		t.Errorf("parameters = %v", first["parameters"])
	}
	status := first["status"].(map[string]any)
	if status["state"] != "succeeded" || status["createdAt"] == nil || status["modifiedAt"] == nil ||
		status["deletedAt"] != nil || status["expiredAt"] != nil || status["deprovisioning"] != nil || status["operations"] != nil {
		t.Errorf("status = %v", status)
	}
	prov := status["provisioning"].(map[string]any)
	for _, k := range []string{"operationID", "type", "state", "description", "createdAt", "updatedAt", "finishedStages"} {
		if _, ok := prov[k]; !ok {
			t.Errorf("provisioning lacks %s: %v", k, prov)
		}
	}
	if prov["operationID"] != "op-1" || prov["type"] != "provision" || prov["error"] != nil {
		t.Errorf("provisioning = %v", prov)
	}
	second := r.body["data"].([]any)[1].(map[string]any)["status"].(map[string]any)
	if second["state"] != "failed" || second["provisioning"].(map[string]any)["error"] != "it broke" {
		t.Errorf("failed runtime status = %v", second)
	}
}

func TestRuntimesEndpointQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedListing(b)
	cases := []struct {
		name  string
		query string
		want  string // instance IDs, comma-separated
		total float64
		next  bool
	}{
		{name: "default", query: "", want: "inst-1,inst-2", total: 2},
		{name: "state all", query: "?state=all", want: "inst-0,inst-1,inst-2", total: 3},
		{name: "deprovisioned", query: "?state=deprovisioned", want: "inst-0", total: 1},
		{name: "state OR", query: "?state=failed&state=deprovisioned", want: "inst-0,inst-2", total: 2},
		{name: "AND across", query: "?state=all&account=ga-1&region=westeurope&plan=azure", want: "inst-0,inst-1", total: 2},
		{name: "subaccount", query: "?subaccount=sa-2", want: "inst-2", total: 1},
		{name: "instance_id", query: "?instance_id=inst-1", want: "inst-1", total: 1},
		{name: "runtime_id", query: "?runtime_id=rt-2", want: "inst-2", total: 1},
		{name: "shoot", query: "?shoot=c-1&shoot=c-0&state=all", want: "inst-0,inst-1", total: 2},
		{name: "page 2", query: "?state=all&page_size=2&page=2", want: "inst-2", total: 3},
		{name: "first page with next", query: "?state=all&page_size=2", want: "inst-0,inst-1", total: 3, next: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.expect(b.do(http.MethodGet, "/runtimes"+tc.query, ""), http.StatusOK)
			if got := strings.Join(dataIDs(r), ","); got != tc.want || r.body["totalCount"] != tc.total {
				t.Fatalf("got %s (total %v), want %s (total %v)", got, r.body["totalCount"], tc.want, tc.total)
			}
			if _, has := r.body["next"]; has != tc.next {
				t.Fatalf("next present %v, want %v: %s", has, tc.next, r.raw)
			}
		})
	}
	// Follow the cursor to the end: the same rows as the offset pages.
	var got []string
	path := "/info/runtimes?state=all&page_size=1"
	for {
		r := b.expect(b.do(http.MethodGet, path, ""), http.StatusOK)
		got = append(got, dataIDs(r)...)
		next, ok := r.body["next"].(string)
		if !ok {
			break
		}
		path = "/info/runtimes?state=all&page_size=1&next=" + next
	}
	if strings.Join(got, ",") != "inst-0,inst-1,inst-2" {
		t.Fatalf("cursor pages gave %v", got)
	}
	// op_detail=all lists every operation.
	r := b.expect(b.do(http.MethodGet, "/info/runtimes?instance_id=inst-1&op_detail=all", ""), http.StatusOK)
	ops := r.body["data"].([]any)[0].(map[string]any)["status"].(map[string]any)["operations"].([]any)
	if len(ops) != 1 || ops[0].(map[string]any)["operationID"] != "op-1" {
		t.Fatalf("operations = %v", ops)
	}
}

func TestRuntimesEndpointBadRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name  string
		query string
		names []string // what the description must mention
	}{
		{name: "unknown state", query: "?state=foo", names: []string{`unknown state "foo"`}},
		{name: "unknown op_detail", query: "?op_detail=some", names: []string{`op_detail "some"`}},
		{name: "page_size too big", query: "?page_size=101", names: []string{`page_size "101"`}},
		{name: "page_size zero", query: "?page_size=0", names: []string{`page_size "0"`}},
		{name: "bad page", query: "?page=x", names: []string{`page "x"`}},
		{name: "malformed next", query: "?next=!!!", names: []string{`next "!!!"`}},
		{name: "all reported", query: "?state=foo&state=bar&page_size=500", names: []string{`"foo"`, `"bar"`, `"500"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.expect(b.do(http.MethodGet, "/info/runtimes"+tc.query, ""), http.StatusBadRequest)
			desc, _ := r.body["description"].(string)
			if r.body["error"] != "BadRequest" {
				t.Fatalf("error key %v: %s", r.body["error"], r.raw)
			}
			for _, n := range tc.names {
				if !strings.Contains(desc, n) {
					t.Errorf("description %q does not name %s", desc, n)
				}
			}
		})
	}
}
