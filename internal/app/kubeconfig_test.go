package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/buildinfo"
)

// TestKubeconfigAccess: who may fetch /kubeconfig/{id}, and the 404s
// without a runtime to connect to (the bundle has no control plane; the
// kubeconfig itself is tested on the real stack in testing/e2e).
func TestKubeconfigAccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("running-1")
	b.expect(b.do(http.MethodPut, provisionPath("provisioning-1"), provisionBody(azurePlanID, `{"name":"c2"}`, baseCtx)), http.StatusAccepted)
	token := withHeader("Authorization", "Bearer "+b.mint(auth.ScopeKubeconfigRead))
	cockpit := withHeader("Origin", "https://cockpit.example")

	for _, tc := range []struct {
		name   string
		opts   []reqOpt
		id     string
		status int
		desc   string
		cors   bool
	}{
		{"kubeconfig:read token, unknown instance", []reqOpt{token}, "no-such", http.StatusNotFound, "does not exist", false},
		{"kubeconfig:read token, provisioning", []reqOpt{token}, "provisioning-1", http.StatusNotFound, "being provisioned", false},
		{"kubeconfig:read token, running but no control plane", []reqOpt{token}, "running-1", http.StatusNotFound, "control plane", false},
		{"allowed origin, no token", []reqOpt{withoutHeader("Authorization"), cockpit}, "running-1", http.StatusNotFound, "control plane", true},
		{"no token", []reqOpt{withoutHeader("Authorization")}, "running-1", http.StatusUnauthorized, "missing bearer token", false},
		{"cld:read token", []reqOpt{withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))}, "running-1", http.StatusForbidden, "kubeconfig:read", false},
		{"other origin, no token", []reqOpt{withoutHeader("Authorization"), withHeader("Origin", "https://evil.example")}, "running-1", http.StatusUnauthorized, "missing", false},
	} {
		r := b.do(http.MethodGet, "/kubeconfig/"+tc.id, "", tc.opts...)
		desc, _ := r.body["description"].(string)
		if r.status != tc.status || r.body["error"] == nil || !strings.Contains(desc, tc.desc) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, r.status, r.raw, tc.status, tc.desc)
		}
		if acao := r.header.Get("Access-Control-Allow-Origin"); (acao == "https://cockpit.example") != tc.cors {
			t.Errorf("%s: Access-Control-Allow-Origin %q", tc.name, acao)
		}
	}

	pre := b.do(http.MethodOptions, "/kubeconfig/running-1", "", withoutHeader("Authorization"), cockpit,
		withHeader("Access-Control-Request-Method", "GET"))
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != "https://cockpit.example" ||
		pre.header.Get("Access-Control-Allow-Methods") != "GET" {
		t.Errorf("preflight from the cockpit: %d %v", pre.status, pre.header)
	}
	other := b.do(http.MethodOptions, "/kubeconfig/running-1", "", withoutHeader("Authorization"), withHeader("Origin", "https://evil.example"))
	if other.status != http.StatusForbidden || other.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", other.status, other.header)
	}
}

// TestInstanceLabels: Name and KubeconfigURL on GET instance, a repeated PUT
// and an update; a trial's expiry, and after it the documentation instead
// of the link.
func TestInstanceLabels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("running-1")
	host := strings.TrimPrefix(b.srv.URL, "http://")
	labels := func(r response) map[string]any {
		t.Helper()
		meta, _ := r.body["metadata"].(map[string]any)
		l, _ := meta["labels"].(map[string]any)
		if l == nil {
			t.Fatalf("no labels: %s", r.raw)
		}
		return l
	}
	want := "https://" + host + "/kubeconfig/running-1"
	for what, r := range map[string]response{
		"GET instance": b.expect(b.do(http.MethodGet, instancePath("running-1"), ""), http.StatusOK),
		"repeated PUT": b.expect(b.do(http.MethodPut, provisionPath("running-1"), provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+","+credsA)), http.StatusOK),
		"update":       b.do(http.MethodPatch, provisionPath("running-1"), patchBody(`"context":{"globalaccount_id":"ga-1"}`)),
	} {
		if l := labels(r); l["Name"] != "c1" || l["KubeconfigURL"] != want || l["APIServerURL"] != nil {
			t.Errorf("%s: labels %v, want Name c1 and KubeconfigURL %s (no APIServerURL without a control plane)", what, l, want)
		}
	}

	prov := b.expect(b.do(http.MethodPut, provisionPath("trial-1"), trialBody("ga-9")), http.StatusAccepted)
	b.provisioned("trial-1", prov.body["operation"].(string), "rt-9", `{"name":"t1"}`)
	l := labels(b.expect(b.do(http.MethodGet, instancePath("trial-1"), ""), http.StatusOK))
	// plans.yaml gives trials 14 days.
	if l["Trial account expiration details"] != "Your cluster expires in 14 days." || l["KubeconfigURL"] == nil {
		t.Fatalf("a new trial's labels: %v", l)
	}
	b.accepted(b.do(http.MethodPut, expirePath("trial-1"), ""))
	l = labels(b.expect(b.do(http.MethodGet, instancePath("trial-1"), ""), http.StatusOK))
	if l["KubeconfigURL"] != nil || l["APIServerURL"] != nil || l["Trial documentation"] == nil ||
		!strings.Contains(l["Trial account expiration details"].(string), "has expired") {
		t.Fatalf("an expired trial's labels: %v", l)
	}
}

// TestEventsFilters: /events lists an instance's operations' acceptance
// and end; every given filter must match, an unmatched one gives nothing.
func TestEventsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("running-1")
	b.running("running-2")
	cld := withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))
	list := func(q string) []any {
		t.Helper()
		r := b.expect(b.doRaw(http.MethodGet, "/events?"+q, "", cld), http.StatusOK) // an array, not an object
		var out []any
		if err := json.Unmarshal([]byte(r.raw), &out); err != nil {
			t.Fatalf("%s: %v: %s", q, err, r.raw)
		}
		if r.header.Get("X-Total-Count") == "" {
			t.Fatalf("%s: no X-Total-Count", q)
		}
		return out
	}
	one := list("instance_ids=running-1")
	if len(one) != 2 {
		t.Fatalf("running-1's events: %v", one)
	}
	first, last := one[0].(map[string]any), one[1].(map[string]any)
	if first["Kind"] != "operation_accepted" || last["Kind"] != "operation_succeeded" || first["InstanceID"] != "running-1" ||
		first["OperationID"] != last["OperationID"] || first["Level"] != "info" {
		t.Fatalf("running-1's events: %v", one)
	}
	if both := list("instance_ids=running-1,running-2"); len(both) != 4 {
		t.Errorf("both instances: %d events", len(both))
	}
	if both := list("instance_ids=running-1&instance_ids=running-2&page_size=3&page=2"); len(both) != 1 {
		t.Errorf("the second page of 3: %d events", len(both))
	}
	for _, q := range []string{"instance_ids=no-such", "runtime_ids=no-such", "operation_ids=no-such",
		"instance_ids=running-1&operation_ids=no-such", "instance_ids=running-1&runtime_ids=no-such"} {
		if got := list(q); len(got) != 0 {
			t.Errorf("%s: %d events, want none", q, len(got))
		}
	}
	if got := list("operation_ids=" + first["OperationID"].(string)); len(got) != 2 {
		t.Errorf("by operation: %v", got)
	}
	b.expectOSBError(b.do(http.MethodGet, "/events", "", cld), http.StatusBadRequest, "BadRequest")
	b.expectOSBError(b.do(http.MethodGet, "/events?instance_ids=running-1", "", withHeader("Authorization", "Bearer "+b.mint(auth.ScopeBrokerWrite))),
		http.StatusForbidden, "Forbidden")
}

// TestVersionEndpoint: GET /version answers without a token with what
// `keb version` prints.
func TestVersionEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.expect(b.do(http.MethodGet, "/version", "", withoutHeader("Authorization")), http.StatusOK)
	info := buildinfo.Read()
	if r.body["version"] != info.Version || r.body["commit"] != info.Commit || r.body["schemaVersion"] != float64(info.SchemaVersion) ||
		info.SchemaVersion == 0 {
		t.Fatalf("/version: %s, want %+v", r.raw, info)
	}
}
