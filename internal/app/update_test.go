package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

// Credentials as a platform sends them in a context; each set has its own
// secret so a test can look for it.
const (
	credsA = `"sm_operator_credentials":{"clientid":"client-a","clientsecret":"secret-a","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`
	credsB = `"sm_operator_credentials":{"clientid":"client-b","clientsecret":"secret-b","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`
	// baseCtx is the context every instance of these tests is created with.
	baseCtx = `"globalaccount_id":"ga-1","subaccount_id":"sa-1","user_id":"u@example.com"`
)

// running provisions an azure instance with credentials A in global account
// ga-1 and lets its provisioning succeed as runtime rt-1 (shoot c-rt-1).
func (b *bundle) running(id string) {
	b.t.Helper()
	prov := b.expect(b.do(http.MethodPut, provisionPath(id), provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+","+credsA)),
		http.StatusAccepted)
	b.provisioned(id, prov.body["operation"].(string), "rt-1", "")
	if st := b.runtimeStatus(id); st["state"] != "succeeded" {
		b.t.Fatalf("provisioned instance as operators see it: %v", st)
	}
}

// accepted checks a 202 to a PATCH and returns its operation ID.
func (b *bundle) accepted(r response) string {
	b.t.Helper()
	b.expect(r, http.StatusAccepted)
	op, _ := r.body["operation"].(string)
	if op == "" {
		b.t.Fatalf("202 without operation: %s", r.raw)
	}
	return op
}

// expectOSBError checks an OSB error answer: status, error key and a
// description.
func (b *bundle) expectOSBError(r response, status int, key string) {
	b.t.Helper()
	b.expect(r, status)
	if r.body["error"] != key || r.body["description"] == nil || r.body["description"] == "" {
		b.t.Fatalf("want error %q with a description, got %s", key, r.raw)
	}
}

// snapshot is what a refused request must leave as it was.
type snapshot struct {
	context, sealed string
	operations      int
}

func (b *bundle) snapshot(id string) snapshot {
	b.t.Helper()
	var s snapshot
	if err := b.pool.QueryRow(b.ctx(), `SELECT context::text, coalesce(encrypted_credentials, '') FROM instances
		WHERE instance_id = $1`, id).Scan(&s.context, &s.sealed); err != nil {
		b.t.Fatal(err)
	}
	s.operations = b.count(`SELECT count(*) FROM operations WHERE instance_id = $1`, id)
	return s
}

func (b *bundle) unchanged(id string, before snapshot, what string) {
	b.t.Helper()
	if after := b.snapshot(id); after != before {
		b.t.Fatalf("%s changed the instance: before %+v, after %+v", what, before, after)
	}
}

// TestSuspendAndResume walks one instance through suspension (PATCH
// active:false), resumption (PATCH active:true) and a second suspension, as
// the platform and operators see it.
func TestSuspendAndResume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-1")
	clusterID := b.instance("inst-1").ClusterID
	if clusterID == "" {
		t.Fatal("provisioned instance without cluster ID")
	}
	if got := b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusOK); got.body["dashboard_url"] == nil {
		t.Fatalf("running instance without dashboard_url: %s", got.raw)
	}

	// Suspension: a temporary deprovisioning.
	suspend := b.accepted(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":false`)))
	if op := b.operation("inst-1", suspend); op.Type != storage.OperationTypeDeprovision || !op.Temporary || !op.InProgress() {
		t.Fatalf("suspension operation: %+v", op)
	}
	rt := b.runtime("inst-1")
	st := rt["status"].(map[string]any)
	if st["state"] != "deprovisioning" || st["deprovisioning"].(map[string]any)["operationID"] != suspend {
		t.Fatalf("suspending runtime as operators see it: %v", st)
	}
	// As upstream's DTO reports it: a suspension (a list of one), no resumption yet.
	if sus := newestOf(st, "suspension"); sus["operationID"] != suspend || st["unsuspension"] != nil {
		t.Fatalf("suspension and unsuspension of a suspending runtime: %v", st)
	}
	lo := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation?operation="+suspend, ""), http.StatusOK)
	if lo.body["state"] != "in progress" || lo.body["description"] == "" {
		t.Fatalf("last_operation of the suspension: %s", lo.raw)
	}
	// While it is torn down, the instance has no console to link to.
	if got := b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusOK); got.body["dashboard_url"] != nil {
		t.Fatalf("instance being suspended shows a dashboard: %s", got.raw)
	}
	// The platform's DELETE must wait for the suspension: a suspension is
	// not a deprovisioning. So must another PATCH.
	before := b.snapshot("inst-1")
	b.expectOSBError(b.do(http.MethodDelete, deprovisionPath("inst-1", azurePlanID), ""), http.StatusUnprocessableEntity, "ConcurrencyError")
	b.expectOSBError(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":true`)), http.StatusUnprocessableEntity, "ConcurrencyError")
	b.unchanged("inst-1", before, "a DELETE and a PATCH during the suspension")

	b.finish(suspend, storage.OperationSucceeded)
	st = b.runtimeStatus("inst-1")
	if st["state"] != "suspended" || st["expiredAt"] != nil {
		t.Fatalf("suspended runtime as operators see it: %v", st)
	}
	got := b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusOK)
	if got.body["dashboard_url"] != nil || got.body["parameters"].(map[string]any)["name"] != "c1" {
		t.Fatalf("GET suspended instance: %s", got.raw)
	}
	// Suspending a suspended instance runs nothing.
	n := b.count(`SELECT count(*) FROM operations`)
	b.expect(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":false`)), http.StatusOK)
	if b.count(`SELECT count(*) FROM operations`) != n {
		t.Fatal("PATCH active:false on a suspended instance started an operation")
	}

	// Resumption: a provisioning; the runtime ID is chosen anew by the
	// engine, the cluster ID stays.
	resume := b.accepted(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":true`)))
	if op := b.operation("inst-1", resume); op.Type != storage.OperationTypeProvision || op.Temporary {
		t.Fatalf("resumption operation: %+v", op)
	}
	rt = b.runtime("inst-1")
	if st := rt["status"].(map[string]any); st["state"] != "provisioning" || rt["runtimeID"] != "" || rt["shootName"] != "" {
		t.Fatalf("resuming runtime as operators see it: %v", rt)
	}
	if inst := b.instance("inst-1"); inst.RuntimeID != "" || inst.ClusterID != clusterID || inst.DashboardURL != "" {
		t.Fatalf("resuming instance: runtime %q, cluster %q (want %q), dashboard %q", inst.RuntimeID, inst.ClusterID, clusterID, inst.DashboardURL)
	}
	var stored map[string]any
	if err := json.Unmarshal(b.instance("inst-1").Context, &stored); err != nil || stored["active"] != true || stored["globalaccount_id"] != "ga-1" {
		t.Fatalf("context not updated: %s (%v)", b.instance("inst-1").Context, err)
	}
	b.provisioned("inst-1", resume, "rt-2", "")
	rt = b.runtime("inst-1")
	if rt["status"].(map[string]any)["state"] != "succeeded" || rt["runtimeID"] != "rt-2" || rt["shootName"] != "c-rt-2" {
		t.Fatalf("resumed runtime as operators see it: %v", rt)
	}
	if uns := newestOf(rt["status"].(map[string]any), "unsuspension"); uns["operationID"] != resume || uns["state"] != "succeeded" {
		t.Fatalf("resumed runtime's unsuspension: %v", rt["status"])
	}
	if inst := b.instance("inst-1"); inst.ClusterID != clusterID {
		t.Fatalf("resumed instance has cluster ID %q, want %q", inst.ClusterID, clusterID)
	}
	got = b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusOK)
	if got.body["dashboard_url"] != "https://console.c-rt-2.example.com" {
		t.Fatalf("GET resumed instance: %s", got.raw)
	}
	// Resuming a running instance runs nothing.
	n = b.count(`SELECT count(*) FROM operations`)
	b.expect(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":true`)), http.StatusOK)
	if b.count(`SELECT count(*) FROM operations`) != n {
		t.Fatal("PATCH active:true on a running instance started an operation")
	}
}

// TestDeprovisionSuspended: a DELETE of a suspended instance is a real
// deprovisioning.
func TestDeprovisionSuspended(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-1")
	suspend := b.accepted(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":false`)))
	b.finish(suspend, storage.OperationSucceeded)

	dep := b.accepted(b.do(http.MethodDelete, deprovisionPath("inst-1", azurePlanID), ""))
	if dep == suspend {
		t.Fatal("DELETE answered with the suspension's operation")
	}
	if op := b.operation("inst-1", dep); op.Type != storage.OperationTypeDeprovision || op.Temporary || !op.InProgress() {
		t.Fatalf("deprovisioning of a suspended instance: %+v", op)
	}
	st := b.runtimeStatus("inst-1")
	if st["state"] != "deprovisioning" || st["deprovisioning"].(map[string]any)["operationID"] != dep {
		t.Fatalf("deprovisioning runtime as operators see it: %v", st)
	}
	// Re-sent: the same operation. A PATCH now is a ConcurrencyError.
	if again := b.accepted(b.do(http.MethodDelete, deprovisionPath("inst-1", azurePlanID), "")); again != dep {
		t.Fatalf("re-sent DELETE got %s, want %s", again, dep)
	}
	b.expectOSBError(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":true`)), http.StatusUnprocessableEntity, "ConcurrencyError")
}

// TestUpdateCredentials: new credentials are stored sealed and pushed to the
// running runtime by an update operation; the same ones re-sent change
// nothing.
func TestUpdateCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-1")
	// The platform sends its whole context, with the new credentials.
	upd := b.accepted(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(baseCtx+","+credsB)))
	if op := b.operation("inst-1", upd); op.Type != storage.OperationTypeUpdate || op.Temporary || !op.InProgress() {
		t.Fatalf("update operation: %+v", op)
	}
	if u := newestOf(b.runtimeStatus("inst-1"), "update"); u["operationID"] != upd || u["type"] != "update" {
		t.Fatalf("operators' view of the update: %v", b.runtimeStatus("inst-1"))
	}
	if n := b.count(`SELECT count(*) FROM instances WHERE instance_id = 'inst-1' AND encrypted_credentials LIKE 'v1.%'
		AND encrypted_credentials NOT LIKE '%secret-b%' AND encrypted_credentials NOT LIKE '%client-b%'
		AND context::text NOT LIKE '%secret-%' AND context::text NOT LIKE '%sm_operator_credentials%'`); n != 1 {
		t.Fatal("new credentials not sealed, or stored in plain text in the context")
	}
	var creds map[string]string
	if err := json.Unmarshal(b.instance("inst-1").Credentials, &creds); err != nil || creds["clientsecret"] != "secret-b" || creds["clientid"] != "client-b" {
		t.Fatalf("stored credentials: %v %v", creds, err)
	}
	lo := b.expect(b.do(http.MethodGet, instancePath("inst-1")+"/last_operation?operation="+upd, ""), http.StatusOK)
	if lo.body["state"] != "in progress" {
		t.Fatalf("last_operation of the update: %s", lo.raw)
	}
	// OSB: GET instance is a 422 while an update runs; so is another PATCH.
	b.expectOSBError(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusUnprocessableEntity, "ConcurrencyError")
	before := b.snapshot("inst-1")
	b.expectOSBError(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(credsA)), http.StatusUnprocessableEntity, "ConcurrencyError")
	b.unchanged("inst-1", before, "a PATCH during the update")
	// An update does not take the runtime down.
	if st := b.runtimeStatus("inst-1"); st["state"] != "succeeded" {
		t.Fatalf("runtime being updated as operators see it: %v", st)
	}

	b.finish(upd, storage.OperationSucceeded)
	if st := b.runtimeStatus("inst-1"); st["state"] != "succeeded" {
		t.Fatalf("updated runtime as operators see it: %v", st)
	}
	got := b.expect(b.do(http.MethodGet, instancePath("inst-1"), ""), http.StatusOK)
	if strings.Contains(got.raw, "secret-") || strings.Contains(got.raw, "client-") {
		t.Fatalf("GET instance exposes credentials: %s", got.raw)
	}

	// The same credentials again (a platform re-sending its context): 200,
	// no operation, and the dashboard URL in the answer.
	before = b.snapshot("inst-1")
	same := b.expect(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(baseCtx+","+credsB)), http.StatusOK)
	if same.body["operation"] != nil || same.body["dashboard_url"] != "https://console.c-rt-1.example.com" {
		t.Fatalf("PATCH with unchanged credentials: %s", same.raw)
	}
	if after := b.snapshot("inst-1"); after.operations != before.operations || after.sealed != before.sealed {
		t.Fatalf("PATCH with unchanged credentials wrote: before %+v, after %+v", before, after)
	}
}

// TestUpdateCredentialsOfSuspended: credentials sent to a suspended instance
// are kept for its resumption; nothing runs.
func TestUpdateCredentialsOfSuspended(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-1")
	suspend := b.accepted(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(`"active":false`)))
	b.finish(suspend, storage.OperationSucceeded)
	n := b.count(`SELECT count(*) FROM operations`)
	b.expect(b.do(http.MethodPatch, provisionPath("inst-1"), patchBody(credsB)), http.StatusOK)
	if b.count(`SELECT count(*) FROM operations`) != n {
		t.Fatal("credentials of a suspended instance started an operation")
	}
	var creds map[string]string
	if err := json.Unmarshal(b.instance("inst-1").Credentials, &creds); err != nil || creds["clientsecret"] != "secret-b" {
		t.Fatalf("stored credentials: %v %v", creds, err)
	}
	if st := b.runtimeStatus("inst-1"); st["state"] != "suspended" {
		t.Fatalf("state %v, want suspended", st["state"])
	}
}

// TestUpdateRefused: every PATCH keb refuses, refused without a trace.
func TestUpdateRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-1")
	// A second instance whose provisioning still runs.
	b.expect(b.do(http.MethodPut, provisionPath("inst-2"), provisionBody(azurePlanID, `{"name":"c2"}`,
		`"globalaccount_id":"ga-2","subaccount_id":"sa-2","user_id":"u",`+credsA)), http.StatusAccepted)
	cases := []struct {
		name, instance, path, body string
		status                     int
		key                        string
	}{
		{name: "accepts_incomplete missing", instance: "inst-1", path: instancePath("inst-1"),
			body: patchBody(`"active":false`), status: 422, key: "AsyncRequired"},
		{name: "accepts_incomplete false", instance: "inst-1", path: instancePath("inst-1") + "?accepts_incomplete=false",
			body: patchBody(`"active":false`), status: 422, key: "AsyncRequired"},
		{name: "other global account", instance: "inst-1", path: provisionPath("inst-1"),
			body: patchBody(`"globalaccount_id":"ga-other","active":false`), status: 422, key: "UpdateNotSupported"},
		{name: "other subaccount", instance: "inst-1", path: provisionPath("inst-1"),
			body: patchBody(`"subaccount_id":"sa-other"`), status: 422, key: "UpdateNotSupported"},
		{name: "incomplete credentials", instance: "inst-1", path: provisionPath("inst-1"),
			body: patchBody(`"sm_operator_credentials":{"clientid":"x","clientsecret":"y"}`), status: 400, key: "BadRequest"},
		{name: "operation running", instance: "inst-2", path: provisionPath("inst-2"),
			body: patchBody(`"active":false,"license_type":"X",` + credsB), status: 422, key: "ConcurrencyError"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := b.snapshot(tc.instance)
			b.expectOSBError(b.do(http.MethodPatch, tc.path, tc.body), tc.status, tc.key)
			b.unchanged(tc.instance, before, "a refused PATCH")
		})
	}
	r := b.do(http.MethodPatch, provisionPath("incomplete-creds"), patchBody(`"sm_operator_credentials":{"clientid":"x"}`))
	if r.status != http.StatusBadRequest || !strings.Contains(r.body["description"].(string), "clientsecret") {
		t.Fatalf("incomplete credentials: the description should name the missing fields: %s", r.raw)
	}
	b.expect(b.do(http.MethodPatch, provisionPath("nope"), patchBody(`"active":false`)), http.StatusNotFound)
	if st := b.runtimeStatus("inst-1"); st["state"] != "succeeded" {
		t.Fatalf("refused PATCHes moved the runtime: %v", st)
	}
	if st := b.runtimeStatus("inst-2"); st["state"] != "provisioning" {
		t.Fatalf("refused PATCHes moved the runtime: %v", st)
	}
}
