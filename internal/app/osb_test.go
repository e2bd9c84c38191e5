package app_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
)

func TestCatalog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	services := r.body["services"].([]any)
	if len(services) != 1 {
		t.Fatalf("want one service, got %d", len(services))
	}
	svc := services[0].(map[string]any)
	if svc["id"] != serviceID || svc["name"] != "kymaruntime" || svc["bindable"] != false {
		t.Fatalf("unexpected service: %v", svc)
	}
	var names []string
	for _, p := range svc["plans"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if got := strings.Join(names, ","); got != "azure,gcp,azure_lite,trial,aws,build-runtime-aws,build-runtime-gcp,build-runtime-azure" {
		t.Fatalf("want the 8 default plans, got %s", got)
	}
	// A catalog is served under a region prefix too (TestCatalogPerPlatformRegion: what differs).
	b.expect(b.do(http.MethodGet, "/oauth/cf-us10/v2/catalog", ""), http.StatusOK)
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	expired, err := b.key.Mint(testIssuer, testAud, "test", []string{auth.ScopeBrokerWrite}, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	otherIssuer, err := b.key.Mint("someone-else", testAud, "test", []string{auth.ScopeBrokerWrite}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		opts   []reqOpt
		status int
		errKey string
	}{
		{name: "no token", opts: []reqOpt{withoutHeader("Authorization")}, status: 401, errKey: "Unauthorized"},
		{name: "garbage token", opts: []reqOpt{withHeader("Authorization", "Bearer not-a-jwt")}, status: 401, errKey: "Unauthorized"},
		{name: "basic auth", opts: []reqOpt{withHeader("Authorization", "Basic dXNlcjpwYXNz")}, status: 401, errKey: "Unauthorized"},
		{name: "expired token", opts: []reqOpt{withHeader("Authorization", "Bearer "+expired)}, status: 401, errKey: "Unauthorized"},
		{name: "wrong issuer", opts: []reqOpt{withHeader("Authorization", "Bearer "+otherIssuer)}, status: 401, errKey: "Unauthorized"},
		{name: "token without broker:write", opts: []reqOpt{withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))}, status: 403, errKey: "Forbidden"},
		{name: "token with broker:write", status: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(http.MethodGet, "/oauth/v2/catalog", "", tc.opts...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if tc.errKey != "" && (r.body["error"] != tc.errKey || r.body["description"] == "") {
				t.Fatalf("want OSB error body with error %q and a description, got %s", tc.errKey, r.raw)
			}
		})
	}
	// Auth guards provisioning too, and a refused request writes nothing.
	r := b.do(http.MethodPut, provisionPath("inst-auth"), provisionBody(azurePlanID, `{"name":"x"}`, ""),
		withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead)))
	b.expect(r, http.StatusForbidden)
	if i, o := b.rows(); i != 0 || o != 0 {
		t.Fatalf("a refused PUT left %d instances and %d operations", i, o)
	}
}

func TestAPIVersionHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, v := range []string{"", "1.0", "3.1", "two"} {
		opt := withHeader("X-Broker-API-Version", v)
		if v == "" {
			opt = withoutHeader("X-Broker-API-Version")
		}
		r := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", "", opt, withHeader("X-Broker-API-Request-Identity", "ident-412")), http.StatusPreconditionFailed)
		if r.body["error"] != "PreconditionFailed" || r.header.Get("X-Broker-API-Request-Identity") != "ident-412" {
			t.Fatalf("version %q: unexpected answer %v %s", v, r.header, r.raw)
		}
	}
}

func TestProvisionAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.expect(b.do(http.MethodPut, "/oauth/cf-us10/v2/service_instances/inst-1?accepts_incomplete=true",
		provisionBody(azurePlanID, `{"name":"my-cluster","region":"westeurope"}`, ""),
		withHeader("X-Broker-API-Request-Identity", "ident-1")), http.StatusAccepted)
	opID, _ := r.body["operation"].(string)
	if opID == "" {
		t.Fatalf("202 without operation: %s", r.raw)
	}
	if r.header.Get("X-Broker-API-Request-Identity") != "ident-1" {
		t.Fatalf("request identity not echoed: %v", r.header)
	}
	if n := b.count(`SELECT count(*) FROM instances WHERE instance_id = 'inst-1' AND platform_region = 'cf-us10'
		AND provider = 'azure' AND provider_region = 'westeurope' AND global_account_id = 'ga-1' AND user_id = 'user@example.com'`); n != 1 {
		t.Fatal("instance not stored with its platform region, provider and lower-cased user")
	}
	if n := b.count(`SELECT count(*) FROM operations WHERE operation_id = $1 AND type = 'provision' AND state = 'in progress'
		AND deadline > now() + interval '23 hours'`, opID); n != 1 {
		t.Fatal("operation not stored in progress with its deadline")
	}

	// Without a region segment the default request region applies.
	b.expect(b.do(http.MethodPut, provisionPath("inst-2"), provisionBody(azurePlanID, `{"name":"c2"}`, `"globalaccount_id":"ga-2","subaccount_id":"sa-2","user_id":"u"`)), http.StatusAccepted)
	if n := b.count(`SELECT count(*) FROM instances WHERE instance_id = 'inst-2' AND platform_region = 'cf-eu10'`); n != 1 {
		t.Fatal("default request region not stored")
	}
}

func TestProvisionRejectedLeavesNoTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("a", 65)
	cases := []struct {
		name   string
		path   string
		body   string
		status int
		errKey string
		names  string // must appear in the description
	}{
		{name: "accepts_incomplete missing", path: instancePath("x"), body: provisionBody(azurePlanID, `{"name":"x"}`, ""), status: 422, errKey: "AsyncRequired"},
		{name: "accepts_incomplete false", path: instancePath("x") + "?accepts_incomplete=false", body: provisionBody(azurePlanID, `{"name":"x"}`, ""), status: 422, errKey: "AsyncRequired"},
		{name: "malformed JSON", path: provisionPath("x"), body: `{"service_id":`, status: 400, errKey: "BadRequest", names: "not a JSON object"},
		{name: "unknown plan", path: provisionPath("x"), body: provisionBody("no-such-plan", `{"name":"x"}`, ""), status: 400, errKey: "BadRequest", names: `"no-such-plan" is not a plan of service ` + serviceID + `; its plans are: ` + azurePlanID + ` (azure)`},
		{name: "unknown service", path: provisionPath("x"), body: strings.Replace(provisionBody(azurePlanID, `{"name":"x"}`, ""), serviceID, "nope", 1), status: 400, errKey: "BadRequest", names: `service_id "nope" is not offered; the catalog offers service_id ` + serviceID},
		{name: "name missing", path: provisionPath("x"), body: provisionBody(azurePlanID, `{}`, ""), status: 400, errKey: "BadRequest", names: "name"},
		{name: "parameters absent", path: provisionPath("x"), body: provisionBody(azurePlanID, "", ""), status: 400, errKey: "BadRequest", names: "name"},
		{name: "name too long", path: provisionPath("x"), body: provisionBody(azurePlanID, `{"name":"`+long+`"}`, ""), status: 400, errKey: "BadRequest", names: "name"},
		{name: "region not offered", path: provisionPath("x"), body: provisionBody(azurePlanID, `{"name":"x","region":"mars-1"}`, ""), status: 400, errKey: "BadRequest", names: "region"},
		{name: "autoscaler above max", path: provisionPath("x"), body: provisionBody(azurePlanID, `{"name":"x","autoScalerMax":500}`, ""), status: 400, errKey: "BadRequest", names: "autoScalerMax"},
		{name: "unknown parameter", path: provisionPath("x"), body: provisionBody(azurePlanID, `{"name":"x","colour":"red"}`, ""), status: 400, errKey: "BadRequest", names: "colour"},
		{name: "globalaccount_id missing", path: provisionPath("x"), body: provisionBody(azurePlanID, `{"name":"x"}`, `"subaccount_id":"s","user_id":"u"`), status: 400, errKey: "BadRequest", names: "globalaccount_id"},
		{name: "empty clientsecret", path: provisionPath("x"), body: provisionBody(azurePlanID, `{"name":"x"}`,
			`"globalaccount_id":"g","subaccount_id":"s","user_id":"u","sm_operator_credentials":{"clientid":"a","clientsecret":"","sm_url":"https://sm","url":"https://auth"}`),
			status: 400, errKey: "BadRequest", names: "clientsecret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.do(http.MethodPut, tc.path, tc.body)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			if r.body == nil || r.body["description"] == nil {
				t.Fatalf("want a JSON error body with a description, got %q", r.raw)
			}
			if tc.errKey != "" && r.body["error"] != tc.errKey {
				t.Fatalf("error %v, want %s", r.body["error"], tc.errKey)
			}
			if tc.names != "" && !strings.Contains(r.body["description"].(string), tc.names) {
				t.Fatalf("description does not name %q: %s", tc.names, r.body["description"])
			}
		})
	}
	if i, o := b.rows(); i != 0 || o != 0 {
		t.Fatalf("rejected PUTs left %d instances and %d operations", i, o)
	}
}

func TestProvisionIdempotence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := provisionBody(azurePlanID, `{"name":"c1","autoScalerMin":3}`, "")
	first := b.expect(b.do(http.MethodPut, provisionPath("inst-1"), body), http.StatusAccepted)

	// Re-sent identical PUT while in progress: the same operation. Key order
	// and whitespace in parameters do not make a request different.
	same := provisionBody(azurePlanID, `{ "autoScalerMin": 3, "name": "c1" }`, "")
	again := b.expect(b.do(http.MethodPut, provisionPath("inst-1"), same), http.StatusAccepted)
	if again.body["operation"] != first.body["operation"] {
		t.Fatalf("re-sent PUT got operation %v, first got %v", again.body["operation"], first.body["operation"])
	}

	// Different attributes: 409, and nothing changes, whatever the new body
	// holds: conflict is decided before validation (OSB), so a body for
	// another plan that this plan's schema refuses, or a context without
	// the accounts, is a conflict too, not a 400.
	gcpInvalid := provisionBody(catalog.GCPPlanID, `{"name":"c1","region":"westeurope","autoScalerMin":1000}`, "")
	noAccounts := provisionBody(azurePlanID, `{"name":"c1","autoScalerMin":3}`, `"user_id":"u"`)
	for _, body := range []string{gcpInvalid, noAccounts} {
		b.expect(b.do(http.MethodPut, provisionPath("inst-free"), body), http.StatusBadRequest)
	}
	for name, body := range map[string]string{
		"parameters":                 provisionBody(azurePlanID, `{"name":"c2"}`, ""),
		"global account":             provisionBody(azurePlanID, `{"name":"c1","autoScalerMin":3}`, `"globalaccount_id":"other","subaccount_id":"sa-1","user_id":"u"`),
		"another plan, invalid body": gcpInvalid,
		"context without accounts":   noAccounts,
	} {
		r := b.expect(b.do(http.MethodPut, provisionPath("inst-1"), body), http.StatusConflict)
		if r.body["description"] == nil {
			t.Fatalf("%s: 409 without description: %s", name, r.raw)
		}
	}
	if i, o := b.rows(); i != 1 || o != 1 {
		t.Fatalf("want 1 instance and 1 operation, got %d and %d", i, o)
	}

	// Once provisioned, an identical PUT is a 200.
	b.exec(`UPDATE operations SET state = 'succeeded' WHERE instance_id = 'inst-1'`)
	b.expect(b.do(http.MethodPut, provisionPath("inst-1"), body), http.StatusOK)
	b.expect(b.do(http.MethodPut, provisionPath("inst-1"), provisionBody(azurePlanID, `{"name":"c2"}`, "")), http.StatusConflict)
}

func TestConcurrentIdenticalProvisions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := provisionBody(azurePlanID, `{"name":"race"}`, "")
	const n = 12
	ops := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := b.do(http.MethodPut, provisionPath("inst-race"), body)
			if r.status == http.StatusAccepted {
				ops[i], _ = r.body["operation"].(string)
			} else {
				ops[i] = r.raw
			}
		}()
	}
	wg.Wait()
	for i := range ops {
		if ops[i] != ops[0] || ops[i] == "" {
			t.Fatalf("concurrent identical PUTs got different answers: %q vs %q", ops[0], ops[i])
		}
	}
	if i, o := b.rows(); i != 1 || o != 1 {
		t.Fatalf("want exactly 1 instance and 1 operation, got %d and %d", i, o)
	}
}

// TestOnePerGlobalAccount: plans.yaml's onePerGlobalAccount (trial, free)
// allows a global account one instance of the plan; a plan without the flag
// allows many.
func TestOnePerGlobalAccount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		plan, planID string
		onlyOne      bool
	}{
		{plan: "trial", planID: trialPlanID, onlyOne: true},
		{plan: "free", planID: catalog.FreePlanID, onlyOne: true},
		{plan: "azure", planID: azurePlanID, onlyOne: false},
	} {
		t.Run(tc.plan, func(t *testing.T) {
			t.Parallel()
			b := setupWith(t, func(c *config.Config) { c.EnabledPlans = append(c.EnabledPlans, "free") }, io.Discard)
			// Free runs on the platform region's hyperscaler: it needs one in the path.
			provisionPath := func(id string) string {
				return "/oauth/cf-eu10/v2/service_instances/" + id + "?accepts_incomplete=true"
			}
			b.expect(b.do(http.MethodPut, provisionPath(tc.plan+"-1"), provisionBody(tc.planID, `{"name":"c1"}`, "")), http.StatusAccepted)
			if !tc.onlyOne {
				b.expect(b.do(http.MethodPut, provisionPath(tc.plan+"-2"), provisionBody(tc.planID, `{"name":"c2"}`, "")), http.StatusAccepted)
				return
			}
			r := b.expect(b.do(http.MethodPut, provisionPath(tc.plan+"-2"), provisionBody(tc.planID, `{"name":"c2"}`, "")), http.StatusBadRequest)
			if r.body["error"] != "TrialExists" || r.body["description"] != "the global account already has a "+tc.plan+" Kyma runtime; only one is allowed" {
				t.Fatalf("want TrialExists naming the %s plan, got %s", tc.plan, r.raw)
			}
			if i, _ := b.rows(); i != 1 {
				t.Fatalf("the refused %s instance left a row: %d instances", tc.plan, i)
			}
			// Another global account may have its own.
			b.expect(b.do(http.MethodPut, provisionPath(tc.plan+"-3"), provisionBody(tc.planID, `{"name":"c3"}`,
				`"globalaccount_id":"ga-other","subaccount_id":"s","user_id":"u"`)), http.StatusAccepted)
		})
	}
}
