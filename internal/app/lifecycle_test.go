package app_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestLastOperation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusAccepted)
	opID := r.body["operation"].(string)

	// In progress: state, a description a person understands, Retry-After.
	lo := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation?operation="+opID, ""), http.StatusOK)
	if lo.body["state"] != "in progress" || lo.body["description"] == "" {
		t.Fatalf("unexpected last_operation: %s", lo.raw)
	}
	if ra, err := strconv.Atoi(lo.header.Get("Retry-After")); err != nil || ra != 7 {
		t.Fatalf("Retry-After %q, want 7", lo.header.Get("Retry-After"))
	}
	// Without the operation parameter: the newest operation.
	b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation", ""), http.StatusOK)

	// Unknown instance and unknown operation: 404 with an OSB body.
	for _, path := range []string{
		instancePath("nope") + "/last_operation",
		instancePath("inst-1") + "/last_operation?operation=nope",
	} {
		nf := b.expect(b.do(http.MethodGet, path, ""), http.StatusNotFound)
		if nf.body["description"] == nil {
			t.Fatalf("404 without description: %s", nf.raw)
		}
	}

	// Finished: no Retry-After.
	b.exec(`UPDATE operations SET state = 'succeeded', description = 'Operation succeeded'`)
	done := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation", ""), http.StatusOK)
	if done.body["state"] != "succeeded" || done.header.Get("Retry-After") != "" {
		t.Fatalf("unexpected finished last_operation: %v %s", done.header, done.raw)
	}
}

func TestGetInstance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.expect(b.do(http.MethodGet, instancePath("nope"), ""), http.StatusNotFound)

	creds := `"sm_operator_credentials":{"clientid":"client-id-1","clientsecret":"very-secret","sm_url":"https://sm.creds.example","url":"https://auth.creds.example"}`
	prov := b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c1","region":"westeurope"}`,
		`"globalaccount_id":"g","subaccount_id":"s","user_id":"u",`+creds)),
		http.StatusAccepted)
	// OSB: 404 while provisioning.
	b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusNotFound)

	// What the engine records when provisioning succeeds: the values the
	// runtime was built with, every default applied.
	resolved := `{"name":"c1","region":"westeurope","provider":"azure","machineType":"Standard_D4s_v5",
		"autoScalerMin":3,"autoScalerMax":20,"zones":["1","2","3"],"components":[],"shootName":"c-rt1"}`
	b.provisioned("inst-1", prov.body["operation"].(string), "rt1", resolved)
	r := b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusOK)
	params, _ := r.body["parameters"].(map[string]any)
	if r.body["service_id"] != serviceID || r.body["plan_id"] != azurePlanID || params["name"] != "c1" ||
		params["region"] != "westeurope" || params["machineType"] != "Standard_D4s_v5" ||
		params["autoScalerMin"] != float64(3) || params["shootName"] != "c-rt1" {
		t.Fatalf("unexpected instance: %s", r.raw)
	}
	if r.body["dashboard_url"] != "https://console.c-rt1.example.com" {
		t.Fatalf("dashboard_url %v: %s", r.body["dashboard_url"], r.raw)
	}
	for _, secret := range []string{"client-id-1", "very-secret", "sm.creds.example", "auth.creds.example", "sm_operator_credentials"} {
		if strings.Contains(r.raw, secret) {
			t.Fatalf("GET instance exposes %q: %s", secret, r.raw)
		}
	}

	// GET instance needs OSB 2.14 or later.
	b.expect(b.do(http.MethodGet, instancePath("inst-1"), "", withHeader("X-Broker-API-Version", "2.13")), http.StatusPreconditionFailed)

	// A provisioning that failed never had a runtime: still 404.
	failed := b.expect(b.do(http.MethodPut, provisionPath("inst-2"), provisionBody(azurePlanID, `{"name":"c2"}`,
		`"globalaccount_id":"g2","subaccount_id":"s2","user_id":"u"`)), http.StatusAccepted)
	b.finish(failed.body["operation"].(string), "failed")
	b.expect(b.do(http.MethodGet, instancePath("inst-2"), ""), http.StatusNotFound)
	if st := b.runtimeStatus("inst-2"); st["state"] != "failed" {
		t.Fatalf("failed provisioning as operators see it: %v", st)
	}
}

func TestCredentialsSealedAtRest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c1"}`,
		`"globalaccount_id":"g","subaccount_id":"s","user_id":"u","sm_operator_credentials":{"clientid":"cid","clientsecret":"very-secret","sm_url":"https://sm","url":"https://auth"}`)),
		http.StatusAccepted)
	if n := b.count(`SELECT count(*) FROM instances WHERE encrypted_credentials LIKE 'v1.%'
		AND encrypted_credentials NOT LIKE '%very-secret%' AND context::text NOT LIKE '%very-secret%'
		AND context::text NOT LIKE '%sm_operator_credentials%' AND context->>'globalaccount_id' = 'g'`); n != 1 {
		t.Fatal("credentials not sealed, or stored in plain text next to the context")
	}
}

func TestDeprovision(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Unknown instance: 410 Gone with an empty JSON object.
	gone := b.expect(b.do(http.MethodDelete, deprovisionPath("nope", azurePlanID), ""), http.StatusGone)
	if strings.TrimSpace(gone.raw) != "{}" {
		t.Fatalf("410 body %q, want {}", gone.raw)
	}

	prov := b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusAccepted)
	provOp := prov.body["operation"].(string)

	// accepts_incomplete is required, and refusing writes nothing.
	b.expect(b.do(http.MethodDelete, instancePath("inst-1")+"?service_id="+serviceID+"&plan_id="+azurePlanID, ""), http.StatusUnprocessableEntity)
	if _, o := b.rows(); o != 1 {
		t.Fatalf("refused DELETE wrote an operation: %d operations", o)
	}

	// A DELETE while provisioning is accepted and halts the provisioning.
	d := b.expect(b.do(http.MethodDelete, deprovisionPath("inst-1", azurePlanID), ""), http.StatusAccepted)
	depOp := d.body["operation"].(string)
	if depOp == "" || depOp == provOp {
		t.Fatalf("deprovision operation %q", depOp)
	}
	halted := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation?operation="+provOp, ""), http.StatusOK)
	if halted.body["state"] != "failed" || !strings.Contains(halted.body["description"].(string), "deprovisioning") {
		t.Fatalf("provisioning not halted: %s", halted.raw)
	}
	// Re-sent DELETE: the same operation.
	again := b.expect(b.do(http.MethodDelete, deprovisionPath("inst-1", azurePlanID), ""), http.StatusAccepted)
	if again.body["operation"] != depOp {
		t.Fatalf("re-sent DELETE got %v, want %s", again.body["operation"], depOp)
	}
	// A PUT while deprovisioning runs is a 422 ConcurrencyError.
	busy := b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusUnprocessableEntity)
	if busy.body["error"] != "ConcurrencyError" {
		t.Fatalf("want ConcurrencyError, got %s", busy.raw)
	}
	lo := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation", ""), http.StatusOK)
	if lo.body["state"] != "in progress" {
		t.Fatalf("last operation should be the deprovisioning in progress: %s", lo.raw)
	}

	// Once the instance is gone: last_operation 410, DELETE 410, GET 404.
	// (What the engine's archive step, Store.ArchiveAndRemove, leaves behind.)
	b.exec(`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
		plan_name, platform_region, provider, provider_region, last_deprovisioning_id, instance_created_at,
		deprovisioning_started_at) SELECT instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
		plan_name, platform_region, provider, provider_region, $1, created_at, now() FROM instances`, depOp)
	b.exec(`DELETE FROM instances`)
	finished := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation?operation="+depOp, ""), http.StatusOK)
	if finished.body["state"] != "succeeded" {
		t.Fatalf("finished deprovisioning: %s", finished.raw)
	}
	b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation", ""), http.StatusGone)
	b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation?operation="+provOp, ""), http.StatusNotFound)
	b.expect(b.do(http.MethodDelete, deprovisionPath("inst-1", azurePlanID), ""), http.StatusGone)
	b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusNotFound)
	// Its ID cannot be reused for a new instance.
	b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusConflict)
}

func TestUnsupportedOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusAccepted)
	// Parameters change only a runtime that runs; this one is still being provisioned.
	r := b.expect(b.do(http.MethodPatch, provisionPath("inst-1"), `{"service_id":"`+serviceID+`","parameters":{"autoScalerMax":5}}`), http.StatusUnprocessableEntity)
	if r.body["error"] != "ConcurrencyError" {
		t.Fatalf("PATCH: %s", r.raw)
	}
	bind := b.expect(b.do(http.MethodPut, instancePath("inst-1")+"/service_bindings/b1",
		`{"service_id":"`+serviceID+`","plan_id":"`+azurePlanID+`"}`), http.StatusBadRequest)
	if bind.body["error"] != "BindingNotSupported" {
		t.Fatalf("bind: %s", bind.raw)
	}
	nf := b.expect(b.do(http.MethodGet, "/no/such/route", ""), http.StatusNotFound)
	if nf.body["error"] != "NotFound" {
		t.Fatalf("unknown route: %s", nf.raw)
	}
}

func TestOperatorRoutesNeedTheirScopes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name, method, path, scope string
		// what the scope gets: an unknown orchestration, an empty body
		want int
	}{
		{"orchestrations", http.MethodGet, "/orchestrations/no-such-id", "broker-upgrade:read", http.StatusNotFound},
		{"upgrade", http.MethodPost, "/upgrade/kyma", "broker-upgrade:write", http.StatusBadRequest},
		{"cancel", http.MethodPut, "/orchestrations/no-such-id/cancel", "broker-upgrade:write", http.StatusNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b.expect(b.do(tc.method, tc.path, "", withoutHeader("Authorization")), http.StatusUnauthorized)
			b.expect(b.do(tc.method, tc.path, ""), http.StatusForbidden) // broker:write is not enough
			b.expect(b.do(tc.method, tc.path, "", withHeader("Authorization", "Bearer "+b.mint(tc.scope))), tc.want)
		})
	}
	// Reading does not let an operator write.
	b.expect(b.do(http.MethodPost, "/upgrade/kyma", `{"targets": {"include": [{"target": "all"}]}}`,
		withHeader("Authorization", "Bearer "+b.mint("broker-upgrade:read"))), http.StatusForbidden)
}

func TestHealthAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.expect(b.do(http.MethodGet, "/healthz", "", withoutHeader("Authorization")), http.StatusOK)
	// The checks run in the background: the first answers may predate them.
	ready := b.readyz("ready", func(r response) bool { return r.status == http.StatusOK })
	if ready.body["status"] != "ready" {
		t.Fatalf("readyz: %s", ready.raw)
	}
	b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	m := b.expect(b.do(http.MethodGet, "/metrics", "", withoutHeader("Authorization")), http.StatusOK)
	want := `keb_http_requests_total{code="200",method="GET",route="/oauth/v2/catalog"} 1`
	if !strings.Contains(m.raw, want) {
		t.Fatalf("metrics lack %s", want)
	}
	// A database behind on migrations is not ready, and says so without
	// naming the database's user, host or port.
	b.exec(`DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)`)
	nr := b.readyz("unavailable", func(r response) bool { return r.status == http.StatusServiceUnavailable })
	if nr.body["status"] != "unavailable" || !strings.Contains(nr.raw, "run `keb migrate up`") {
		t.Fatalf("readyz: %s", nr.raw)
	}
	u, err := url.Parse(b.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	// The user and database names of the test database ("keb", "postgres")
	// are words keb's own advice uses, so they are looked for as the
	// driver would print them.
	for _, secret := range []string{u.Host, u.Hostname(), "user=" + u.User.Username(), "database=", "@"} {
		if strings.Contains(nr.raw, secret) {
			t.Errorf("readyz without a token reveals %q: %s", secret, nr.raw)
		}
	}
}
