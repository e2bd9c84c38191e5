package app_test

import (
	"fmt"
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
		"provider": "Azure", "userID": "user@example.com",
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
		{name: "pageSize too big", query: "?pageSize=101", names: []string{`bad pageSize "101"`}},
		{name: "pageSize and page_size differ", query: "?pageSize=10&page_size=20", names: []string{`page_size "20" and pageSize "10" differ`}},
		{name: "page_size zero", query: "?page_size=0", names: []string{`page_size "0"`}},
		{name: "bad page", query: "?page=x", names: []string{`page "x"`}},
		{name: "malformed next", query: "?next=!!!", names: []string{`next "!!!"`}},
		{name: "all reported", query: "?state=foo&state=bar&page_size=500", names: []string{`"foo"`, `"bar"`, `"500"`}},
		{name: "expired not a boolean", query: "?expired=yes", names: []string{`bad expired "yes" (want true or false)`}},
		{name: "with_bindings not a boolean", query: "?with_bindings=1", names: []string{`bad with_bindings "1"`}},
		{name: "runtime_config not a boolean", query: "?runtime_config=yes", names: []string{`bad runtime_config "yes"`}},
		{name: "gardener_config not a boolean", query: "?gardener_config=all", names: []string{`bad gardener_config "all"`}},
		{name: "kyma_config and cluster_config reported together", query: "?kyma_config=x&cluster_config=y",
			names: []string{`bad kyma_config "x"`, `bad cluster_config "y"`}},
		{name: "runtime_config without a control plane", query: "?runtime_config=true",
			names: []string{"no control plane", "APP_KCP_KUBECONFIG"}},
		{name: "upstream state keb does not record", query: "?state=upgrading", names: []string{`unknown state "upgrading"`}},
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

// TestRuntimesEndpointUpstreamFields: the fields upstream KEB's listing has
// and operators' tools read, from what keb stores: the context's licence and
// commercial model, the claimed hyperscaler account, the subaccount's CIS
// attributes, the account the instance was created in; and omitted where
// keb knows none.
func TestRuntimesEndpointUpstreamFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedListing(b)
	b.exec(`UPDATE instances SET context = '{"license_type":"CUSTOMER","commercial_model":"SUBSCRIPTION","platform":"cf"}',
		subscription_secret_name = 'azure-pool-7', subscription_global_account_id = 'ga-old' WHERE instance_id = 'inst-1'`)
	b.exec(`INSERT INTO subaccount_states (subaccount_id, beta_enabled, used_for_production, changed_at)
		VALUES ('sa-1', true, 'USED_FOR_PRODUCTION', now())`)
	r := b.expect(b.do(http.MethodGet, "/runtimes?state=all", ""), http.StatusOK)
	byID := map[string]map[string]any{}
	for _, d := range r.body["data"].([]any) {
		byID[d.(map[string]any)["instanceID"].(string)] = d.(map[string]any)
	}
	want := map[string]any{"licenseType": "CUSTOMER", "commercialModel": "SUBSCRIPTION", "subscriptionSecretName": "azure-pool-7",
		"subscriptionGlobalAccountID": "ga-old", "betaEnabled": "true", "usedForProduction": "USED_FOR_PRODUCTION"}
	for k, v := range want {
		if got := byID["inst-1"][k]; got != v {
			t.Errorf("inst-1 %s = %v, want %v", k, got, v)
		}
	}
	// inst-2: nothing known; its account is its subscription's.
	for k := range want {
		got, has := byID["inst-2"][k]
		if k == "subscriptionGlobalAccountID" {
			if got != "ga-2" {
				t.Errorf("inst-2 subscriptionGlobalAccountID = %v, want its globalAccountID ga-2", got)
			}
			continue
		}
		if has {
			t.Errorf("inst-2 %s = %v, want it omitted", k, got)
		}
	}
	// The archived inst-0 shares sa-1's CIS attributes, and has no context.
	if a := byID["inst-0"]; a["betaEnabled"] != "true" || a["licenseType"] != nil || a["subscriptionGlobalAccountID"] != "ga-1" {
		t.Errorf("archived runtime: %v", a)
	}
	if _, has := byID["inst-1"]["runtimeConfig"]; has {
		t.Error("runtimeConfig shown without runtime_config=true")
	}
}

// TestRuntimesAsUpstreamsClientReadsThem: upstream's own client library (its utils/keb.py,
// monitor_instances) asks /runtimes for its instances by instance_id with page and pageSize,
// follows the pages until it holds totalCount runtimes, and reads instanceID, status.state and
// provider. keb answers it as upstream does: pageSize is taken (not refused as unknown), the
// pages add up to totalCount, and provider carries upstream's names (AWS, Azure, GCP,
// SapConvergedCloud, Alicloud), not the provider types keb stores.
func TestRuntimesAsUpstreamsClientReadsThem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	providers := map[string]string{"aws": "AWS", "azure": "Azure", "gcp": "GCP", "openstack": "SapConvergedCloud", "alicloud": "Alicloud"}
	var query []string
	for p := range providers {
		b.exec(`INSERT INTO instances (instance_id, runtime_id, global_account_id, subaccount_id, user_id, service_id,
			plan_id, plan_name, platform_region, provider, provider_region, parameters, context, created_at, state, shoot_name)
			VALUES ($1, 'rt-' || $1, 'ga-1', 'sa-1', 'testing@script.sap', $2, $3, 'azure', 'cf-eu10', $4, 'region-1',
				'{"name":"c1"}', '{}', now(), 'succeeded', 'c-' || $4)`, "inst-"+p, serviceID, azurePlanID, p)
		query = append(query, "instance_id=inst-"+p)
	}
	got := map[string]map[string]any{}
	for page := 1; ; page++ {
		r := b.expect(b.do(http.MethodGet, fmt.Sprintf("/runtimes?%s&page=%d&pageSize=2", strings.Join(query, "&"), page), ""),
			http.StatusOK)
		for _, d := range r.body["data"].([]any) {
			got[d.(map[string]any)["instanceID"].(string)] = d.(map[string]any)
		}
		if r.body["totalCount"] != float64(len(providers)) {
			t.Fatalf("page %d: totalCount %v, want %d", page, r.body["totalCount"], len(providers))
		}
		if len(got) >= len(providers) {
			break
		}
		if page > len(providers) {
			t.Fatalf("pages of 2 never added up to totalCount %d: got %d runtimes", len(providers), len(got))
		}
	}
	for p, name := range providers {
		d := got["inst-"+p]
		if d == nil {
			t.Fatalf("inst-%s not listed", p)
		}
		if d["provider"] != name || d["status"].(map[string]any)["state"] != "succeeded" {
			t.Errorf("inst-%s: provider %v, status %v; want provider %s, state succeeded", p, d["provider"], d["status"], name)
		}
	}
}

// TestRuntimesEndpointUpstreamOptions: upstream's query options select and
// show what they do upstream.
func TestRuntimesEndpointUpstreamOptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedListing(b)
	b.exec(`UPDATE instances SET expired_at = now() - interval '1 minute', state = 'suspended' WHERE instance_id = 'inst-2'`)
	for _, q := range []string{"?expired=true", "?expired=true&state=all", "?expired=true&plan=azure&region=eastus"} {
		r := b.expect(b.do(http.MethodGet, "/runtimes"+q, ""), http.StatusOK)
		if got := strings.Join(dataIDs(r), ","); got != "inst-2" || r.body["totalCount"] != float64(1) {
			t.Errorf("%s: %s (total %v), want inst-2 (total 1)", q, got, r.body["totalCount"])
		}
	}
	if r := b.expect(b.do(http.MethodGet, "/runtimes?expired=true&state=succeeded", ""), http.StatusOK); len(dataIDs(r)) != 0 {
		t.Errorf("expired and succeeded: %v", dataIDs(r))
	}
	if r := b.expect(b.do(http.MethodGet, "/runtimes?expired=false&state=all", ""), http.StatusOK); r.body["totalCount"] != float64(3) {
		t.Errorf("expired=false filters: %s", r.raw)
	}

	// with_bindings is upstream's name for bindings.
	b.exec(`INSERT INTO bindings (binding_id, instance_id, runtime_id, plan_id, state, operation_id, service_account, expires_at, deadline, created_at)
		VALUES ('bind-1', 'inst-1', 'rt-1', $1, 'succeeded', 'bop-1', 'sa', now() + interval '600 seconds', now(), now())`, azurePlanID)
	for _, q := range []string{"with_bindings=true", "bindings=true", "bindings=false&with_bindings=true"} {
		r := b.expect(b.do(http.MethodGet, "/runtimes?instance_id=inst-1&"+q, ""), http.StatusOK)
		bs, _ := r.body["data"].([]any)[0].(map[string]any)["bindings"].([]any)
		if len(bs) != 1 || bs[0].(map[string]any)["id"] != "bind-1" || bs[0].(map[string]any)["expiresInSeconds"] != float64(600) {
			t.Errorf("%s: bindings %v", q, bs)
		}
	}

	// Upstream's provisioner-era options are accepted and add nothing.
	r := b.expect(b.do(http.MethodGet, "/runtimes?instance_id=inst-1&kyma_config=true&cluster_config=true&gardener_config=false", ""), http.StatusOK)
	for _, k := range []string{"kymaConfig", "clusterConfig"} {
		if _, has := r.body["data"].([]any)[0].(map[string]any)[k]; has {
			t.Errorf("%s shown: %s", k, r.raw)
		}
	}
}

// TestRuntimesEndpointStatusLists: status.update, suspension, unsuspension
// and the upgrades in upstream's list shape; op_detail=all lists every
// operation of each kind, op_detail=last the newest.
func TestRuntimesEndpointStatusLists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedListing(b)
	b.exec(`INSERT INTO operations (operation_id, instance_id, type, state, description, finished_stages, deadline, data, temporary, created_at)
		VALUES ('upd-1', 'inst-1', 'update', 'succeeded', '', '{}', now(), '{}', false, now() - interval '100 minutes'),
		('sus-1', 'inst-1', 'deprovision', 'succeeded', '', '{}', now(), '{}', true, now() - interval '90 minutes'),
		('res-1', 'inst-1', 'provision', 'succeeded', '', '{}', now(), '{}', false, now() - interval '80 minutes'),
		('upd-2', 'inst-1', 'update', 'succeeded', '', '{}', now(), '{}', false, now() - interval '70 minutes'),
		('upc-1', 'inst-1', 'upgrade_cluster', 'failed', '', '{}', now(), '{}', false, now() - interval '60 minutes'),
		('upc-2', 'inst-1', 'upgrade_cluster', 'succeeded', '', '{}', now(), '{}', false, now() - interval '50 minutes')`)
	b.exec(`UPDATE operations SET created_at = now() - interval '110 minutes' WHERE operation_id = 'op-1'`)
	ids := func(st map[string]any, list string) string {
		l, _ := st[list].(map[string]any)
		if l == nil {
			return "<none>"
		}
		var out []string
		for _, op := range l["data"].([]any) {
			out = append(out, op.(map[string]any)["operationID"].(string))
		}
		return fmt.Sprintf("%s count=%v total=%v", strings.Join(out, ","), l["count"], l["totalCount"])
	}
	cases := []struct {
		detail string
		want   map[string]string
	}{
		{detail: "all", want: map[string]string{"update": "upd-2,upd-1 count=2 total=2", "suspension": "sus-1 count=1 total=1",
			"unsuspension": "res-1 count=1 total=1", "upgradingKyma": "<none>", "upgradingCluster": "upc-2,upc-1 count=2 total=2"}},
		{detail: "last", want: map[string]string{"update": "upd-2 count=1 total=1", "suspension": "sus-1 count=1 total=1",
			"unsuspension": "res-1 count=1 total=1", "upgradingKyma": "<none>", "upgradingCluster": "upc-2 count=1 total=1"}},
	}
	for _, tc := range cases {
		r := b.expect(b.do(http.MethodGet, "/runtimes?instance_id=inst-1&op_detail="+tc.detail, ""), http.StatusOK)
		st := r.body["data"].([]any)[0].(map[string]any)["status"].(map[string]any)
		for list, want := range tc.want {
			if got := ids(st, list); got != want {
				t.Errorf("op_detail=%s: %s = %s, want %s", tc.detail, list, got, want)
			}
		}
		if p := st["provisioning"].(map[string]any)["operationID"]; p != "res-1" {
			t.Errorf("op_detail=%s: provisioning %v, want the newest, res-1", tc.detail, p)
		}
	}
}
