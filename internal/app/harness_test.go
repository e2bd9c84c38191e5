package app_test

import (
	"context"
	"crypto"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/apitest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var loadOpenAPI = sync.OnceValues(apitest.Load)

func openAPIDoc(t *testing.T) *apitest.Document {
	t.Helper()
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

const (
	serviceID   = "47c9dcbf-ff30-448e-ab36-d3bad66ba281"
	azurePlanID = "4deee563-e5ec-4731-b9b1-53b42d855f0c"
	trialPlanID = "7d55d31d-35ae-4438-bf13-6ffdfa107d9f"
	testIssuer  = "keb-test"
	testAud     = "keb"
	// A fixed test key: 32 bytes, base64.
	testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	// The dev token endpoint's and the CIS stand-in's clients.
	testDevClient, testDevSecret = "keb-dev", "dev-secret"
	testCISClient, testCISSecret = "keb-dev-cis", "cis-secret"
)

// bundle is one test's broker: its own database, its own signing key and an
// HTTP server running the whole router.
type bundle struct {
	t    *testing.T
	srv  *httptest.Server
	key  *auth.DevKey
	pool *pgxpool.Pool
	// store is a storage.Store on the test's database, so that tests move
	// operations along through the engine's own storage calls rather than
	// SQL that might drift from them. It enqueues nothing: no engine runs.
	store *storage.Store
	token string
	dbURL string
	app   *app.App
	// closedConns counts connections the server has closed, openedConns
	// those it accepted.
	closedConns, openedConns atomic.Int64
	// cis is the CIS stand-in served under /dev/cis.
	cis *cisstub.Server
}

func setup(t *testing.T) *bundle {
	t.Helper()
	return setupWith(t, nil, io.Discard)
}

// setupWith is setup with the config changed by tune (when not nil) and
// the server's log, at debug level and in JSON, written to logOut.
func setupWith(t *testing.T, tune func(*config.Config), logOut io.Writer) *bundle {
	t.Helper()
	log := logrus.New()
	log.SetOutput(logOut)
	log.SetLevel(logrus.DebugLevel)
	log.SetFormatter(&logrus.JSONFormatter{})
	return setupWithLogger(t, tune, log)
}

// setupWithLog is setup with the server logging to log.
func setupWithLog(t *testing.T, log logrus.FieldLogger) *bundle {
	t.Helper()
	return setupWithLogger(t, nil, log)
}

func setupWithLogger(t *testing.T, tune func(*config.Config), log logrus.FieldLogger) *bundle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dbURL := pgtest.NewDatabase(t)
	key, err := auth.LoadOrCreateDevKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults
	cfg.DatabaseURL = dbURL
	cfg.DatabaseSecretKey = testSecretKey
	cfg.Issuer, cfg.Audience = testIssuer, testAud
	cfg.RetryAfter = 7 * time.Second
	cfg.Engine.Workers = 0 // these tests look at the front door only
	cfg.KubeconfigAllowOrigins = []string{"https://cockpit.example"}
	if tune != nil {
		tune(&cfg)
	}
	// `keb dev`'s token endpoint and CIS stand-in are served as keb dev
	// serves them: the hostile-input suites reach them too.
	cis := cisstub.New(testCISClient, testCISSecret)
	devAuth, err := auth.NewVerifier(ctx, auth.Config{PublicKeys: []crypto.PublicKey{key.Public()}, Issuer: testIssuer,
		Audience: testAud}, log)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(ctx, cfg, log, &app.DevOptions{PublicKeys: []crypto.PublicKey{key.Public()},
		TokenIssue: auth.DevTokenHandler(key, auth.DevClient{ID: testDevClient, Secret: testDevSecret}, testIssuer, testAud),
		Mounts:     map[string]http.Handler{devstack.CISPrefix + "/": devstack.CISMount(cis, devAuth.Require(auth.ScopeBrokerWrite))}})
	if err != nil {
		t.Fatalf("building app: %v", err)
	}
	t.Cleanup(a.Close)
	// The server keb runs, with its timeouts and connection cap.
	// Every answer these tests get is checked against docs/openapi.yaml.
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = a.NewServer()
	srv.Config.Handler = apitest.Recorder(t, openAPIDoc(t), a.Handler)
	srv.Listener = a.Listener(srv.Listener)
	b := &bundle{t: t, srv: srv, key: key, app: a, cis: cis}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			b.openedConns.Add(1)
		case http.StateClosed, http.StateHijacked:
			b.closedConns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	pool, err := storage.Open(ctx, dbURL, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	cipher, err := storage.NewCipher(testSecretKey)
	if err != nil {
		t.Fatal(err)
	}
	b.pool, b.dbURL, b.store = pool, dbURL, storage.NewStore(pool, cipher, nil)
	b.token = b.mint(auth.ScopeBrokerWrite, auth.ScopeCLDRead)
	return b
}

func (b *bundle) mint(scopes ...string) string {
	b.t.Helper()
	tok, err := b.key.Mint(testIssuer, testAud, "test", scopes, time.Hour)
	if err != nil {
		b.t.Fatal(err)
	}
	return tok
}

// response is what a test looks at: status, headers and decoded JSON body.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

type reqOpt func(*http.Request)

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }
func withoutHeader(k string) reqOpt { return func(r *http.Request) { r.Header.Del(k) } }

// do sends an OSB request with the API version header and the bundle's token
// unless opts say otherwise.
func (b *bundle) do(method, path, body string, opts ...reqOpt) response {
	b.t.Helper()
	return b.doWith(http.DefaultClient, method, path, body, opts...)
}

// expectContinueClient sends "Expect: 100-continue" requests' bodies only
// once the server asks for them, however long it takes to answer: a body
// the server refuses by its Content-Length is then never sent. Without it,
// a server that answers 413 and closes races the client still writing the
// body: the client may see "connection reset" instead of the answer.
var expectContinueClient = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Hour}}

// doWith is do through client.
func (b *bundle) doWith(client *http.Client, method, path, body string, opts ...reqOpt) response {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Authorization", "Bearer "+b.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	res, err := client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			b.t.Fatalf("%s %s: body is not a JSON object: %v: %s", method, path, err, raw)
		}
	}
	return out
}

func (b *bundle) expect(r response, status int) response {
	b.t.Helper()
	if r.status != status {
		b.t.Fatalf("status %d, want %d; body: %s", r.status, status, r.raw)
	}
	return r
}

// count runs a counting query; tests use it to prove a 4xx left no trace.
func (b *bundle) count(query string, args ...any) int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}

func (b *bundle) rows() (instances, operations int) {
	return b.count(`SELECT count(*) FROM instances`), b.count(`SELECT count(*) FROM operations`)
}

func (b *bundle) exec(query string, args ...any) {
	b.t.Helper()
	if _, err := b.pool.Exec(context.Background(), query, args...); err != nil {
		b.t.Fatal(err)
	}
}

// ctx bounds one storage call of a test.
func (b *bundle) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b.t.Cleanup(cancel)
	return ctx
}

// finish ends an in-progress operation as the engine does (storage's
// Finish), which also moves the instance's state; state is "succeeded" or
// "failed".
func (b *bundle) finish(opID string, state storage.OperationState) {
	b.t.Helper()
	op, _, err := b.store.Work(b.ctx(), opID)
	if err != nil {
		b.t.Fatalf("loading operation %s: %v", opID, err)
	}
	op.State = state
	switch state {
	case storage.OperationSucceeded:
		op.Description = "Operation succeeded"
	case storage.OperationFailed:
		op.Description, op.ErrorMessage = "Operation failed", "it broke"
	default:
		b.t.Fatalf("finish(%s, %q): not a final state", opID, state)
	}
	ok, err := b.store.Finish(b.ctx(), op)
	if err != nil || !ok {
		b.t.Fatalf("finishing operation %s as %s: ok %v, %v", opID, state, ok, err)
	}
}

// provisioned does what a successful provisioning of the instance does in
// the engine: it records the runtime identity (the cluster ID only the first
// time), the dashboard URL and the resolved parameters, then finishes opID
// as succeeded. resolved "" records {"name":"c1"}.
func (b *bundle) provisioned(instanceID, opID, runtimeID, resolved string) {
	b.t.Helper()
	if resolved == "" {
		resolved = `{"name":"c1"}`
	}
	shoot := "c-" + runtimeID
	if _, err := b.store.SetRuntimeIdentity(b.ctx(), instanceID, storage.RuntimeIdentity{
		RuntimeID: runtimeID, ClusterID: "cluster-" + runtimeID, ShootName: shoot}); err != nil {
		b.t.Fatal(err)
	}
	if err := b.store.SetProvisioned(b.ctx(), instanceID, storage.Provisioned{
		ProviderRegion: "westeurope", DashboardURL: "https://console." + shoot + ".example.com",
		Parameters: json.RawMessage(resolved)}); err != nil {
		b.t.Fatal(err)
	}
	b.finish(opID, storage.OperationSucceeded)
}

// instance reads an instance (credentials opened) through the store.
func (b *bundle) instance(id string) storage.Instance {
	b.t.Helper()
	inst, err := b.store.Instance(b.ctx(), id)
	if err != nil {
		b.t.Fatalf("reading instance %s: %v", id, err)
	}
	return inst
}

// operation reads an operation through the store.
func (b *bundle) operation(instanceID, opID string) storage.Operation {
	b.t.Helper()
	op, err := b.store.Operation(b.ctx(), instanceID, opID)
	if err != nil {
		b.t.Fatalf("reading operation %s: %v", opID, err)
	}
	return op
}

// runtime is the instance as operators see it in /info/runtimes.
func (b *bundle) runtime(id string) map[string]any {
	b.t.Helper()
	r := b.expect(b.do(http.MethodGet, "/info/runtimes?state=all&instance_id="+id, ""), http.StatusOK)
	data, _ := r.body["data"].([]any)
	if len(data) != 1 {
		b.t.Fatalf("/info/runtimes lists %d runtimes for %s: %s", len(data), id, r.raw)
	}
	return data[0].(map[string]any)
}

// runtimeStatus is the status object of the instance in /info/runtimes.
func (b *bundle) runtimeStatus(id string) map[string]any {
	b.t.Helper()
	return b.runtime(id)["status"].(map[string]any)
}

// newestOf is the newest operation of one of a runtime status's lists
// (update, suspension, ...: upstream's {data, count, totalCount}); nil
// without one.
func newestOf(status map[string]any, list string) map[string]any {
	l, _ := status[list].(map[string]any)
	data, _ := l["data"].([]any)
	if len(data) == 0 {
		return nil
	}
	op, _ := data[0].(map[string]any)
	return op
}

func provisionBody(planID, params string, ctxFields string) string {
	if ctxFields == "" {
		ctxFields = `"globalaccount_id":"ga-1","subaccount_id":"sa-1","user_id":"User@Example.com"`
	}
	s := `{"service_id":"` + serviceID + `","plan_id":"` + planID + `","context":{` + ctxFields + `}`
	if params != "" {
		s += `,"parameters":` + params
	}
	return s + `}`
}

// patchBody is an OSB update request changing only the context.
func patchBody(ctxFields string) string {
	return `{"service_id":"` + serviceID + `","context":{` + ctxFields + `}}`
}

func instancePath(id string) string { return "/oauth/v2/service_instances/" + id }

func provisionPath(id string) string { return instancePath(id) + "?accepts_incomplete=true" }

func deprovisionPath(id, planID string) string {
	return instancePath(id) + "?accepts_incomplete=true&service_id=" + serviceID + "&plan_id=" + planID
}

// readyz polls /readyz until cond holds (its checks run in the background,
// every APP_READINESS_INTERVAL) and returns that answer.
func (b *bundle) readyz(what string, cond func(response) bool) response {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r := b.do(http.MethodGet, "/readyz", "", withoutHeader("Authorization"))
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("/readyz not %s within a minute: %d %s", what, r.status, r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
