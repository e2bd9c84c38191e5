package app_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/storage"
)

// The console needs a cld:read token; once logged in it lists and filters
// runtimes as /info/runtimes does and shows an instance's operations.
func TestConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.expect(b.do(http.MethodPut, provisionPath("inst-c1"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusAccepted)
	b.expect(b.do(http.MethodPut, provisionPath("inst-c2"), provisionBody(azurePlanID, `{"name":"c2"}`,
		`"globalaccount_id":"ga-2","subaccount_id":"sa-2","user_id":"u"`)), http.StatusAccepted)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) (int, string, string) {
		t.Helper()
		res, err := c.Get(b.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Request.URL.Path, string(body)
	}
	login := func(token string) (int, string) {
		t.Helper()
		res, err := c.PostForm(b.srv.URL+"/console/login", url.Values{"token": {token}, "next": {"/console/runtimes?plan=azure"}})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}

	if code, path, _ := get("/console"); code != http.StatusOK || path != "/console/login" {
		t.Fatalf("without a token: %d at %s, want the login page", code, path)
	}
	if code, body := login(b.mint(auth.ScopeBrokerWrite)); code != http.StatusUnauthorized || !strings.Contains(body, "lacks scope cld:read") {
		t.Fatalf("login without cld:read: %d %s", code, body)
	}
	if code, body := login("not-a-token"); code != http.StatusUnauthorized || !strings.Contains(body, "refused") {
		t.Fatalf("login with garbage: %d", code)
	}
	if code, body := login(b.mint(auth.ScopeCLDRead)); code != http.StatusOK || !strings.Contains(body, "inst-c1") || !strings.Contains(body, "inst-c2") {
		t.Fatalf("after login: %d\n%s", code, body)
	}
	code, _, body := get("/console/runtimes?account=ga-2")
	if code != http.StatusOK || strings.Contains(body, "inst-c1") || !strings.Contains(body, "inst-c2") || !strings.Contains(body, "1 shown of 1") {
		t.Fatalf("filtered table: %d\n%s", code, body)
	}
	if code, _, body := get("/console/runtimes?page_size=1"); code != http.StatusOK || !strings.Contains(body, `id="next"`) {
		t.Fatalf("first of two pages has no next link: %d", code)
	}
	// The second of two pages links back and counts the pages; rows show
	// the runtime's name and a short ID that copies the whole one.
	if code, _, body := get("/console/runtimes?page_size=1&page=2"); code != http.StatusOK || !strings.Contains(body, `id="prev"`) ||
		strings.Contains(body, `id="next"`) || !strings.Contains(body, "page 2 of 2") {
		t.Fatalf("second of two pages: %d\n%s", code, body)
	}
	if code, _, body := get("/console/runtimes?account=ga-2"); code != http.StatusOK || !strings.Contains(body, ">c2</a>") ||
		!strings.Contains(body, `data-copy="inst-c2"`) || !strings.Contains(body, "provision</strong> running for") {
		t.Fatalf("runtime row without name, copy button or current operation: %d\n%s", code, body)
	}
	if code, _, body := get("/console/runtimes?page_size=1000"); code != http.StatusBadRequest || !strings.Contains(body, "page_size") {
		t.Fatalf("bad page size: %d\n%s", code, body)
	}
	code, _, body = get("/console/instances/inst-c2")
	if code != http.StatusOK || !strings.Contains(body, "provision") || !strings.Contains(body, `data-live="true"`) ||
		!strings.Contains(body, "waiting for a worker") {
		t.Fatalf("instance page: %d\n%s", code, body)
	}
	// The live refresh re-reads the whole body: state, Kyma, modules, operations.
	if code, _, body := get("/console/instances/inst-c2?fragment=instance"); code != http.StatusOK || strings.Contains(body, "<html") ||
		!strings.Contains(body, `id="state"`) || !strings.Contains(body, `data-live="true"`) || !strings.Contains(body, `id="timeline"`) {
		t.Fatalf("instance fragment: %d\n%s", code, body)
	}
	if code, _, _ := get("/console/instances/nope"); code != http.StatusNotFound {
		t.Fatalf("unknown instance: %d", code)
	}

	// Once provisioned, nothing runs: the page stops refreshing, and its
	// times say their zone.
	op, err := b.store.LastOperation(b.ctx(), "inst-c1")
	if err != nil {
		t.Fatalf("operation of inst-c1: %v", err)
	}
	b.provisioned("inst-c1", op.ID, "rt-c1", "")
	code, _, body = get("/console/instances/inst-c1")
	if code != http.StatusOK || !strings.Contains(body, `data-live="false"`) || !strings.Contains(body, ">succeeded<") ||
		!regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`).MatchString(body) {
		t.Fatalf("provisioned instance page: %d\n%s", code, body)
	}
	if !strings.Contains(body, `id="history"`) || !strings.Contains(body, `data-operation="`+op.ID+`"`) {
		t.Fatalf("the instance page lacks its every-operation history:\n%s", body)
	}
	if strings.Contains(body, `id="expired"`) || strings.Contains(body, `id="gone"`) {
		t.Fatalf("a running instance's page says it expired or is gone:\n%s", body)
	}

	// An expired runtime's page says so.
	b.exec(`UPDATE instances SET expired_at = now() WHERE instance_id = 'inst-c1'`)
	if code, _, body := get("/console/instances/inst-c1"); code != http.StatusOK || !strings.Contains(body, `id="expired"`) ||
		!strings.Contains(body, "suspended for good") {
		t.Fatalf("expired instance page: %d\n%s", code, body)
	}

	// A deprovisioned one says it is gone and shows what the archive keeps
	// of its operations. This archive row is one an earlier keb wrote (no
	// operations kept with it): the page shows what its summary keeps, the
	// deprovisioning.
	b.exec(`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
		plan_name, platform_region, provider, provider_region, last_deprovisioning_id,
		instance_created_at, deprovisioning_started_at) SELECT instance_id, runtime_id, global_account_id, subaccount_id,
		plan_id, plan_name, platform_region, provider, provider_region, 'dep-c1', created_at, now()
		FROM instances WHERE instance_id = 'inst-c1'`)
	b.exec(`DELETE FROM instances WHERE instance_id = 'inst-c1'`)
	code, _, body = get("/console/instances/inst-c1")
	if code != http.StatusOK || !strings.Contains(body, `id="gone"`) || !strings.Contains(body, `id="archived"`) ||
		!strings.Contains(body, `data-operation="dep-c1"`) || !strings.Contains(body, `data-live="false"`) || strings.Contains(body, `id="timeline"`) {
		t.Fatalf("deprovisioned instance page: %d\n%s", code, body)
	}
}

// TestConsoleArchivedHistory: an instance provisioned, updated, suspended,
// resumed and deprovisioned shows all of these operations on its console
// page once its deprovisioning archived it, as the archive step does it
// (Store.ArchiveAndRemove).
func TestConsoleArchivedHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-h")
	first, err := b.store.LastOperation(b.ctx(), "inst-h")
	if err != nil {
		t.Fatal(err)
	}
	prov := first.ID
	upd := b.accepted(b.do(http.MethodPatch, provisionPath("inst-h"), updateBody("", `{"autoScalerMax":6}`)))
	b.finish(upd, storage.OperationSucceeded)
	suspend := b.accepted(b.do(http.MethodPatch, provisionPath("inst-h"), patchBody(`"active":false`)))
	b.finish(suspend, storage.OperationSucceeded)
	resume := b.accepted(b.do(http.MethodPatch, provisionPath("inst-h"), patchBody(`"active":true`)))
	b.provisioned("inst-h", resume, "rt-2", "")
	dep := b.accepted(b.do(http.MethodDelete, deprovisionPath("inst-h", azurePlanID), ""))

	inst := b.instance("inst-h")
	if err := b.store.ArchiveAndRemove(b.ctx(), storage.ArchivedInstance{InstanceID: "inst-h", RuntimeID: inst.RuntimeID,
		GlobalAccountID: inst.GlobalAccountID, SubAccountID: inst.SubAccountID, PlanID: inst.PlanID, PlanName: inst.PlanName,
		PlatformRegion: inst.PlatformRegion, Provider: inst.Provider, ProviderRegion: inst.ProviderRegion,
		ShootName: inst.ShootName, ProvisioningState: storage.OperationSucceeded, LastDeprovisioningID: dep,
		InstanceCreatedAt: inst.CreatedAt, DeprovisioningStartedAt: time.Now(),
		DeprovisioningDescription: "Operation succeeded: the runtime is deprovisioned"}); err != nil {
		t.Fatalf("ArchiveAndRemove: %v", err)
	}
	code, body := b.consolePage("/console/instances/inst-h")
	if code != http.StatusOK || !strings.Contains(body, `id="gone"`) || !strings.Contains(body, `id="archived"`) {
		t.Fatalf("archived instance page: %d\n%s", code, body)
	}
	// Every operation, oldest first, each with what it ended as.
	rows := regexp.MustCompile(`(?s)<tr data-operation="([^"]+)"><td><strong>([^<]+)</strong>.*?<span class="state ([^"]+)">`).
		FindAllStringSubmatch(body, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+" "+r[2]+" "+r[3])
	}
	want := []string{prov + " provision succeeded", upd + " update succeeded", suspend + " suspension succeeded",
		resume + " provision succeeded", dep + " deprovision succeeded"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("archived operations on the page:\n%s\nwant\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), body)
	}
	if !strings.Contains(body, "Operation succeeded: the runtime is deprovisioned") || strings.Contains(body, `id="left-out"`) {
		t.Fatalf("archived deprovisioning without its description, or operations said left out:\n%s", body)
	}
	// A long life: the page says how many older operations the archive
	// left out.
	b.exec(`UPDATE instances_archive SET operations_left_out = 52 WHERE instance_id = 'inst-h'`)
	if code, body := b.consolePage("/console/instances/inst-h"); code != http.StatusOK ||
		!strings.Contains(body, `id="left-out">52 older operations are not kept`) {
		t.Fatalf("archived instance page with operations left out: %d\n%s", code, body)
	}
	// The runtimes list shows the archived runtime as before: its row is
	// the summary's, not the kept operations'.
	if code, body := b.consolePage("/console/runtimes?state=deprovisioned"); code != http.StatusOK || !strings.Contains(body, "inst-h") {
		t.Fatalf("deprovisioned runtimes list: %d\n%s", code, body)
	}
}

// The overview answers, without a UUID, how many runtimes fail and why,
// and the orchestrations and events pages how far an orchestration is and
// what an instance's operations did.
func TestConsoleOverviewAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"ov-1", "ov-2", "ov-3"} {
		b.expect(b.do(http.MethodPut, provisionPath(id), provisionBody(azurePlanID, `{"name":"`+id+`"}`, "")), http.StatusAccepted)
	}
	b.exec(`UPDATE operations SET state = 'failed', stage = 'check_runtime', finished_at = now(), error_message = 'the cluster never came up',
		data = data || '{"errorCategory":"infrastructure-manager"}' WHERE instance_id IN ('ov-1', 'ov-2')`)
	b.exec(`UPDATE instances SET state = 'failed' WHERE instance_id IN ('ov-1', 'ov-2')`)
	b.exec(`INSERT INTO orchestrations (orchestration_id, type, state, parameters) VALUES ('orch-1', 'upgrade_kyma', 'in progress', '{}')`)
	for i, st := range []string{"succeeded", "succeeded", "failed", "pending"} {
		b.exec(`INSERT INTO orchestration_operations (orchestration_id, instance_id, operation_id, position, state, runtime_id,
			global_account_id, subaccount_id, plan_id, plan_name, region, shoot_name, maintenance_window_begin, maintenance_window_end, not_before)
			VALUES ('orch-1', $1, $2, $3, $4, 'rt', 'ga', 'sa', 'p', 'azure', 'westeurope', 'shoot', '', '', now())`,
			fmt.Sprintf("oi-%d", i), fmt.Sprintf("oo-%d", i), i, st)
	}
	get := func(path string) (int, string) {
		t.Helper()
		return b.consolePage(path)
	}
	code, body := get("/console")
	if code != http.StatusOK || !regexp.MustCompile(`id="failing">2<`).MatchString(body) || !regexp.MustCompile(`id="total">3<`).MatchString(body) ||
		!strings.Contains(body, "check_runtime · infrastructure-manager") || !strings.Contains(body, `id="ops-chart"`) ||
		!strings.Contains(body, "the cluster never came up") {
		t.Fatalf("overview: %d\n%s", code, body)
	}
	if code, body := get("/console?window=week"); code != http.StatusOK || !strings.Contains(body, "last 7 days") {
		t.Fatalf("overview of the week: %d", code)
	}
	// A bookmark of the runtimes list from when it was /console still opens that list.
	old := b.doWith(noRedirects, http.MethodGet, "/console?plan=azure&state=failed", "", withHeader("Cookie", "keb_console_token="+b.mint(auth.ScopeCLDRead)))
	if old.status != http.StatusMovedPermanently || old.header.Get("Location") != "/console/runtimes?plan=azure&state=failed" {
		t.Fatalf("old list bookmark: %d %q", old.status, old.header.Get("Location"))
	}
	for _, q := range []string{"window=year", "window=day&window=week", "window=day&plan=azure", "window=%3Cscript%3E"} {
		if code, body := get("/console?" + q); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) || strings.Contains(body, `"<script>"`) {
			t.Errorf("overview ?%s: %d\n%s", q, code, body)
		}
	}
	code, body = get("/console/orchestrations")
	if code != http.StatusOK || !strings.Contains(body, "3 of 4 done") || !strings.Contains(body, "1 failed") {
		t.Fatalf("orchestrations: %d\n%s", code, body)
	}
	code, body = get("/console/orchestrations/orch-1?state=failed")
	if code != http.StatusOK || !strings.Contains(body, "3 of 4 done") || !strings.Contains(body, `data-instance="oi-2"`) || strings.Contains(body, `data-instance="oi-0"`) {
		t.Fatalf("orchestration: %d\n%s", code, body)
	}
	if code, _ := get("/console/orchestrations/nope"); code != http.StatusNotFound {
		t.Fatalf("unknown orchestration: %d", code)
	}
	code, body = get("/console/events?instance_ids=ov-3")
	if code != http.StatusOK || !strings.Contains(body, `data-kind="operation_accepted"`) {
		t.Fatalf("events: %d\n%s", code, body)
	}
	if code, body := get("/console/events"); code != http.StatusOK || !strings.Contains(body, "Name an instance") {
		t.Fatalf("events without a filter: %d", code)
	}
	// A replica without workers reads no pool, and says so.
	if code, body := get("/console/pool"); code != http.StatusServiceUnavailable || !strings.Contains(body, `class="error"`) {
		t.Fatalf("pool: %d\n%s", code, body)
	}
}
