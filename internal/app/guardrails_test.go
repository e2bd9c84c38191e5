package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// testBlocklist has a rule of every kind: plan=, GA=, plan!=, GA!=, a rule
// with two filters, and each operation key.
const testBlocklist = `provision:
  - '"Provisioning of {plan} is paused in {globalAccount}: incident 4711", plan=trial, GA=ga-blocked'
  - '"Only azure may be provisioned in {globalAccount}", plan!=azure, GA=ga-azure-only'
update:
  - '"Updates in {globalAccount} are paused", GA=ga-frozen'
planUpgrade:
  - '"Upgrades to {plan} are paused", plan=aws'
deprovision:
  - '"Deprovisioning is blocked outside ga-1 ({globalAccount})", GA!=ga-1'
`

func writeBlocklist(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "blocklist.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func gaCtx(ga string) string {
	return `"globalaccount_id":"` + ga + `","subaccount_id":"sa-` + ga + `","user_id":"u"`
}

// TestBlocklist: each rule kind of the operation blocklist refuses what it
// names with its message (400), and lets everything else through.
func TestBlocklist(t *testing.T) {
	t.Parallel()
	path := writeBlocklist(t, testBlocklist)
	b := setupWith(t, func(c *config.Config) { c.BlocklistFile = path }, io.Discard)
	blocked := func(r response, msg string) {
		t.Helper()
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if r.body["description"] != msg {
			t.Errorf("description %q, want %q", r.body["description"], msg)
		}
	}
	trial := func(name string) string { return `{"name":"` + name + `"}` }

	// provision: plan= and GA= both must match.
	blocked(b.do(http.MethodPut, provisionPath("bl-1"), provisionBody(trialPlanID, trial("t1"), gaCtx("ga-blocked"))),
		"Provisioning of trial is paused in ga-blocked: incident 4711")
	b.expect(b.do(http.MethodPut, provisionPath("bl-2"), provisionBody(azurePlanID, trial("a1"), gaCtx("ga-blocked"))), http.StatusAccepted)
	b.expect(b.do(http.MethodPut, provisionPath("bl-3"), provisionBody(trialPlanID, trial("t2"), gaCtx("ga-other"))), http.StatusAccepted)
	// plan!=
	blocked(b.do(http.MethodPut, provisionPath("bl-4"), provisionBody(catalog.GCPPlanID, trial("g1"), gaCtx("ga-azure-only"))),
		"Only azure may be provisioned in ga-azure-only")
	b.expect(b.do(http.MethodPut, provisionPath("bl-5"), provisionBody(azurePlanID, trial("a2"), gaCtx("ga-azure-only"))), http.StatusAccepted)
	if n := b.count(`SELECT count(*) FROM instances WHERE instance_id IN ('bl-1', 'bl-4')`); n != 0 {
		t.Errorf("%d blocked instances written", n)
	}

	// update (GA=): a PATCH of a runtime in ga-frozen.
	prov := b.expect(b.do(http.MethodPut, provisionPath("bl-frozen"), provisionBody(azurePlanID, trial("f1"), gaCtx("ga-frozen"))), http.StatusAccepted)
	b.provisioned("bl-frozen", prov.body["operation"].(string), "rt-frozen", "")
	blocked(b.do(http.MethodPatch, provisionPath("bl-frozen"), patchBody(gaCtx("ga-frozen")+`,"active":false`)),
		"Updates in ga-frozen are paused")

	// planUpgrade: blocked by the plan it goes to.
	prov = b.expect(b.do(http.MethodPut, provisionPath("bl-trial"), provisionBody(trialPlanID, trial("t3"), gaCtx("ga-1"))), http.StatusAccepted)
	b.provisioned("bl-trial", prov.body["operation"].(string), "rt-trial", "")
	blocked(b.do(http.MethodPatch, provisionPath("bl-trial"),
		`{"service_id":"`+serviceID+`","plan_id":"`+catalog.AWSPlanID+`","context":{`+gaCtx("ga-1")+`}}`),
		"Upgrades to aws are paused")

	// deprovision (GA!=): blocked outside ga-1, allowed in it.
	blocked(b.do(http.MethodDelete, deprovisionPath("bl-frozen", azurePlanID), ""),
		"Deprovisioning is blocked outside ga-1 (ga-frozen)")
	b.expect(b.do(http.MethodDelete, deprovisionPath("bl-trial", trialPlanID), ""), http.StatusAccepted)
}

// TestBlocklistRefusedAtStart: keb does not start with a blocklist rule it
// cannot read, and says which one.
func TestBlocklistRefusedAtStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"unknown operation", `provison: ['"x"']`, `unknown operation "provison"`},
		{"unknown filter", `provision: ['"x", region=eu']`, `unknown filter "region"`},
		{"unknown placeholder", `update: ['"paused for {account}", GA=a']`, `unknown placeholder {account}`},
		{"no quotes", `deprovision: ['paused, GA=a']`, "must start with its message in double quotes"},
		{"empty value", `planUpgrade: ['"x", plan=']`, "empty value"},
		{"not a list", `provision: '"x"'`, "not a map of operation to a list of rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Defaults
			cfg.DatabaseURL = pgtest.NewDatabase(t)
			cfg.DatabaseSecretKey = testSecretKey
			cfg.Engine.Workers = 0
			cfg.TrustGateway = true // no keys needed: the start must fail at the blocklist
			cfg.BlocklistFile = writeBlocklist(t, tc.file)
			log := logrus.New()
			log.SetOutput(io.Discard)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			a, err := app.New(ctx, cfg, log, &app.DevOptions{})
			if err == nil {
				a.Close()
				t.Fatal("keb started with a malformed blocklist")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), cfg.BlocklistFile) {
				t.Errorf("error %q does not name the file and %q", err, tc.want)
			}
		})
	}
}

// TestAllowedGlobalAccounts: with the restriction on, only the listed
// global accounts provision, others get upstream's text.
func TestAllowedGlobalAccounts(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) {
		c.RestrictToAllowedGlobalAccounts, c.AllowedGlobalAccounts = true, []string{"ga-1"}
	}, io.Discard)
	r := b.do(http.MethodPut, provisionPath("ag-1"), provisionBody(azurePlanID, `{"name":"a"}`, gaCtx("ga-2")))
	b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
	if want := "The Global Account ga-2 is not allowed to provision a Kyma runtime"; r.body["description"] != want {
		t.Errorf("description %q, want %q", r.body["description"], want)
	}
	b.expect(b.do(http.MethodPut, provisionPath("ag-2"), provisionBody(azurePlanID, `{"name":"a"}`, gaCtx("ga-1"))), http.StatusAccepted)
}

// TestQuota: with APP_BROKER_CHECK_QUOTA_LIMIT, a provisioning beyond the
// subaccount's entitlement (read from the CIS stand-in over HTTP) gets
// upstream's 400, a subaccount CIS does not know too, and CIS being down a
// 503 with nothing written; trial is not checked.
func TestQuota(t *testing.T) {
	t.Parallel()
	stub := cisstub.New("quota-client", "quota-secret")
	cisSrv := httptest.NewServer(stub.Handler(nil))
	t.Cleanup(cisSrv.Close)
	b := setupWith(t, func(c *config.Config) {
		c.QuotaCheck, c.CISEntitlementsURL = true, cisSrv.URL
		c.Cleanup.CISAuthURL, c.Cleanup.CISClientID, c.Cleanup.CISClientSecret = cisSrv.URL+cisstub.TokenPath, "quota-client", "quota-secret"
	}, io.Discard)
	if err := stub.SetEntitlement("sa-q", "azure", 2); err != nil {
		t.Fatal(err)
	}
	ctx := func(sa string) string { return `"globalaccount_id":"ga-q","subaccount_id":"` + sa + `","user_id":"u"` }
	put := func(id, plan, sa string) response {
		return b.do(http.MethodPut, provisionPath(id), provisionBody(plan, `{"name":"`+id+`"}`, ctx(sa)))
	}
	b.expect(put("q-1", azurePlanID, "sa-q"), http.StatusAccepted)
	b.expect(put("q-2", azurePlanID, "sa-q"), http.StatusAccepted)
	// The same PUT again is not a third instance.
	b.expect(put("q-2", azurePlanID, "sa-q"), http.StatusAccepted)
	r := put("q-3", azurePlanID, "sa-q")
	b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
	if want := "Kyma instances quota exceeded for plan azure. assignedQuota: 2, remainingQuota: 0. Contact your administrator."; r.body["description"] != want {
		t.Errorf("description %q, want %q", r.body["description"], want)
	}
	// Another plan of the same subaccount has its own entitlement: none.
	r = put("q-gcp", catalog.GCPPlanID, "sa-q")
	if !strings.Contains(fmt.Sprint(r.body["description"]), "assignedQuota: 0") {
		t.Errorf("gcp without entitlement: %s", r.raw)
	}
	// A subaccount CIS does not know.
	r = put("q-4", azurePlanID, "sa-nobody")
	b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
	if want := "Subaccount sa-nobody does not exist"; r.body["description"] != want {
		t.Errorf("description %q, want %q", r.body["description"], want)
	}
	// Trial is one per global account anyway: not checked.
	b.expect(put("q-trial", trialPlanID, "sa-nobody"), http.StatusAccepted)
	// CIS down: retried, then 503, nothing written.
	stub.FailNext(100, http.StatusServiceUnavailable)
	r = put("q-5", azurePlanID, "sa-q")
	b.expectOSBError(r, http.StatusServiceUnavailable, "ServiceUnavailable")
	if n := b.count(`SELECT count(*) FROM instances WHERE instance_id IN ('q-3', 'q-gcp', 'q-4', 'q-5')`); n != 0 {
		t.Errorf("%d refused instances written", n)
	}
}
