package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/storage"
)

func expirePath(id string) string { return "/expire/service_instance/" + id }

// trialBody provisions a trial of global account ga.
func trialBody(ga string) string {
	return provisionBody(trialPlanID, `{"name":"t1"}`, `"globalaccount_id":"`+ga+`","subaccount_id":"sa-`+ga+`","user_id":"u"`)
}

// expiredAt reads the expiredAt of an expire answer.
func expiredAt(t *testing.T, r response) time.Time {
	t.Helper()
	s, _ := r.body["expiredAt"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || at.IsZero() {
		t.Fatalf("expiredAt %q: %v: %s", s, err, r.raw)
	}
	return at
}

func TestExpireEndpointAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	prov := b.expect(b.do(http.MethodPut, provisionPath("trial-1"), trialBody("ga-1")), http.StatusAccepted)
	b.provisioned("trial-1", prov.body["operation"].(string), "rt-1", "")
	for name, opt := range map[string]reqOpt{
		"no token":       withoutHeader("Authorization"),
		"cld:read token": withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead)),
	} {
		want := map[string]int{"no token": http.StatusUnauthorized, "cld:read token": http.StatusForbidden}[name]
		r := b.do(http.MethodPut, expirePath("trial-1"), "", opt)
		if r.status != want || r.body["error"] == nil || r.body["description"] == nil {
			t.Fatalf("%s: %d %s, want %d with an OSB error body", name, r.status, r.raw, want)
		}
	}
	if n := b.count(`SELECT count(*) FROM instances WHERE expired_at IS NOT NULL`) + b.count(`SELECT count(*) FROM operations WHERE type = 'deprovision'`); n != 0 {
		t.Fatal("a refused expiry changed the instance")
	}
	if st := b.runtimeStatus("trial-1"); st["state"] != "succeeded" || st["expiredAt"] != nil {
		t.Fatalf("a refused expiry moved the runtime: %v", st)
	}
	// broker:write alone is enough.
	b.accepted(b.do(http.MethodPut, expirePath("trial-1"), "", withHeader("Authorization", "Bearer "+b.mint(auth.ScopeBrokerWrite))))
}

// TestExpireTrial: an operator expires a trial; it is suspended for good.
func TestExpireTrial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	prov := b.expect(b.do(http.MethodPut, provisionPath("trial-1"), trialBody("ga-1")), http.StatusAccepted)
	provOp := prov.body["operation"].(string)

	// While its provisioning runs: 409, nothing written.
	busy := b.expect(b.do(http.MethodPut, expirePath("trial-1"), ""), http.StatusConflict)
	if busy.body["error"] != "ConcurrencyError" || busy.body["description"] == nil {
		t.Fatalf("expiry while provisioning: %s", busy.raw)
	}
	if b.count(`SELECT count(*) FROM instances WHERE expired_at IS NOT NULL`) != 0 || b.count(`SELECT count(*) FROM operations`) != 1 {
		t.Fatal("a refused expiry wrote")
	}

	b.provisioned("trial-1", provOp, "rt-1", "")
	began := time.Now()
	r := b.expect(b.do(http.MethodPut, expirePath("trial-1"), ""), http.StatusAccepted)
	suspend, _ := r.body["operation"].(string)
	at := expiredAt(t, r)
	if suspend == "" || at.Before(began.Add(-time.Minute)) || at.After(time.Now().Add(time.Minute)) {
		t.Fatalf("expire answer: %s", r.raw)
	}
	if op := b.operation("trial-1", suspend); op.Type != storage.OperationTypeDeprovision || !op.Temporary || !op.InProgress() {
		t.Fatalf("expiry operation: %+v", op)
	}
	st := b.runtimeStatus("trial-1")
	if st["state"] != "deprovisioning" || st["expiredAt"] == nil {
		t.Fatalf("expiring trial as operators see it: %v", st)
	}
	// The platform polls the suspension like any operation.
	lo := b.expect(b.do(http.MethodGet, instancePath("trial-1")+"/last_operation?operation="+suspend, ""), http.StatusOK)
	if lo.body["state"] != "in progress" {
		t.Fatalf("last_operation of the expiry: %s", lo.raw)
	}
	// Again while the suspension runs: 409.
	b.expect(b.do(http.MethodPut, expirePath("trial-1"), ""), http.StatusConflict)

	b.finish(suspend, storage.OperationSucceeded)
	st = b.runtimeStatus("trial-1")
	listedAt, _ := st["expiredAt"].(string)
	if listed, err := time.Parse(time.RFC3339Nano, listedAt); st["state"] != "suspended" || err != nil || !listed.Equal(at) {
		t.Fatalf("expired trial as operators see it: %v (expiredAt answered: %s)", st, at)
	}
	got := b.expect(b.do(http.MethodGet, instancePath("trial-1"), ""), http.StatusOK)
	if got.body["dashboard_url"] != nil {
		t.Fatalf("GET expired trial shows a dashboard: %s", got.raw)
	}

	// Repeated once suspended: 200, the first expiry time, no operation.
	n := b.count(`SELECT count(*) FROM operations`)
	again := b.expect(b.do(http.MethodPut, expirePath("trial-1"), ""), http.StatusOK)
	if again.body["operation"] != nil || !expiredAt(t, again).Equal(at) {
		t.Fatalf("repeated expiry: %s (first expiredAt %s)", again.raw, at)
	}
	if b.count(`SELECT count(*) FROM operations`) != n {
		t.Fatal("repeated expiry started an operation")
	}

	// Expired is for good: no resumption...
	before := b.snapshot("trial-1")
	b.expectOSBError(b.do(http.MethodPatch, provisionPath("trial-1"), patchBody(`"active":true`)), http.StatusUnprocessableEntity, "InstanceExpired")
	b.unchanged("trial-1", before, "a refused resumption")
	if st := b.runtimeStatus("trial-1"); st["state"] != "suspended" {
		t.Fatalf("refused resumption moved the runtime: %v", st)
	}
	// ...and no second trial for the global account while it exists.
	tr := b.expect(b.do(http.MethodPut, provisionPath("trial-2"), trialBody("ga-1")), http.StatusBadRequest)
	if tr.body["error"] != "TrialExists" {
		t.Fatalf("second trial: %s", tr.raw)
	}
	// The platform deprovisions it for real.
	dep := b.accepted(b.do(http.MethodDelete, deprovisionPath("trial-1", trialPlanID), ""))
	if op := b.operation("trial-1", dep); op.Type != storage.OperationTypeDeprovision || op.Temporary {
		t.Fatalf("deprovisioning of an expired trial: %+v", op)
	}
}

// TestExpireRefused: plans that do not expire and unknown instances.
func TestExpireRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("inst-1")
	r := b.expect(b.do(http.MethodPut, expirePath("inst-1"), ""), http.StatusBadRequest)
	if r.body["error"] != "BadRequest" || r.body["description"] == nil {
		t.Fatalf("expiring an azure instance: %s", r.raw)
	}
	nf := b.expect(b.do(http.MethodPut, expirePath("nope"), ""), http.StatusNotFound)
	if nf.body["error"] == nil || nf.body["description"] == nil {
		t.Fatalf("expiring an unknown instance: %s", nf.raw)
	}
	if b.count(`SELECT count(*) FROM instances WHERE expired_at IS NOT NULL`) != 0 || b.count(`SELECT count(*) FROM operations`) != 1 {
		t.Fatal("a refused expiry wrote")
	}
	if st := b.runtimeStatus("inst-1"); st["state"] != "succeeded" || st["expiredAt"] != nil {
		t.Fatalf("a refused expiry moved the runtime: %v", st)
	}
	// Only PUT is served.
	b.expect(b.do(http.MethodPost, expirePath("inst-1"), ""), http.StatusMethodNotAllowed)
}
