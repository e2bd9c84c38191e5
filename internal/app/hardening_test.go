package app_test

import (
	"bufio"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/testing/logtest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// Regression tests for issue 8: each reproduces one defect a hostile or
// careless client found, through HTTP against the real server and database.

// databaseText is every row of every table of the test's database as text:
// what an attacker with a dump would read.
func (b *bundle) databaseText() string {
	b.t.Helper()
	rows, err := b.pool.Query(b.ctx(), `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name)
		FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')
		AND table_type = 'BASE TABLE'`)
	if err != nil {
		b.t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			b.t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if len(tables) < 3 {
		b.t.Fatalf("found only tables %v", tables)
	}
	var all strings.Builder
	for _, tbl := range tables {
		var text string
		if err := b.pool.QueryRow(b.ctx(), `SELECT coalesce(string_agg(t::text, E'\n'), '') FROM `+tbl+` t`).Scan(&text); err != nil {
			b.t.Fatalf("reading %s: %v", tbl, err)
		}
		all.WriteString(tbl + "\n" + text + "\n")
	}
	return all.String()
}

func credsWith(secret string) string {
	return `"sm_operator_credentials":{"clientid":"c","clientsecret":"` + secret +
		`","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`
}

// Defect 1: credentials under a differently-cased key were used, skipped
// the schema and were stored in plain text.
func TestCredentialsNeverInPlainText(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	b := setupWith(t, nil, logs)
	marker := "MARKER-" + uuid.NewString()
	variant := func(key, secret string) string {
		return `"` + key + `":{"clientid":"c","clientsecret":"` + secret + `","sm_url":"https://sm","url":"https://auth"}`
	}

	// Accepted paths: sealed, and readable only through the cipher.
	b.expect(b.do(http.MethodPut, provisionPath("creds-1"), provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+","+credsWith(marker+"-put"))), http.StatusAccepted)
	if got := string(b.instance("creds-1").Credentials); !strings.Contains(got, marker+"-put") {
		t.Fatalf("accepted credentials not stored: %q", got)
	}
	b.running("creds-2")
	b.accepted(b.do(http.MethodPatch, provisionPath("creds-2"), patchBody(credsWith(marker+"-patch"))))
	if got := string(b.instance("creds-2").Credentials); !strings.Contains(got, marker+"-patch") {
		t.Fatalf("patched credentials not stored: %q", got)
	}

	// Refused paths: each names the offending key and writes nothing.
	refused := []struct {
		name, method, path, body, names string
	}{
		{"PUT upper-case key", http.MethodPut, provisionPath("creds-3"),
			provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+","+variant("SM_OPERATOR_CREDENTIALS", marker)), "SM_OPERATOR_CREDENTIALS"},
		{"PUT mixed-case key", http.MethodPut, provisionPath("creds-3"),
			provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+","+variant("Sm_Operator_Credentials", marker)), "Sm_Operator_Credentials"},
		{"PUT both keys", http.MethodPut, provisionPath("creds-3"),
			provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+","+credsWith(marker)+","+variant("SM_Operator_Credentials", marker)), "SM_Operator_Credentials"},
		{"PUT incomplete credentials", http.MethodPut, provisionPath("creds-3"),
			provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+`,"sm_operator_credentials":{"clientid":"c","clientsecret":"`+marker+`"}`), "sm_url"},
		{"PUT case variant inside credentials", http.MethodPut, provisionPath("creds-3"),
			provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+`,"sm_operator_credentials":{"clientid":"c","ClientSecret":"`+marker+`","clientsecret":"x","sm_url":"https://sm","url":"https://auth"}`), "ClientSecret"},
		{"PUT case variant of another context key", http.MethodPut, provisionPath("creds-3"),
			provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+`,"GlobalAccount_ID":"`+marker+`"`), "GlobalAccount_ID"},
		{"PATCH upper-case key", http.MethodPatch, provisionPath("creds-2"), patchBody(variant("SM_OPERATOR_CREDENTIALS", marker)), "SM_OPERATOR_CREDENTIALS"},
		{"PATCH both keys", http.MethodPatch, provisionPath("creds-2"), patchBody(credsWith(marker) + "," + variant("Sm_Operator_Credentials", marker)), "Sm_Operator_Credentials"},
		{"PATCH incomplete credentials", http.MethodPatch, provisionPath("creds-2"), patchBody(`"sm_operator_credentials":{"clientsecret":"` + marker + `"}`), "clientid"},
		{"PATCH upper-case top-level field", http.MethodPatch, provisionPath("creds-2"),
			`{"service_id":"` + serviceID + `","CONTEXT":{` + credsWith(marker) + `}}`, "CONTEXT"},
	}
	before := b.snapshot("creds-2")
	for _, tc := range refused {
		r := b.do(tc.method, tc.path, tc.body)
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(r.body["description"].(string), tc.names) {
			t.Errorf("%s: description does not name %s: %s", tc.name, tc.names, r.raw)
		}
	}
	b.unchanged("creds-2", before, "refused PATCHes")
	if n := b.count(`SELECT count(*) FROM instances WHERE instance_id = 'creds-3'`); n != 0 {
		t.Fatalf("a refused PUT stored the instance")
	}

	if dump := b.databaseText(); strings.Contains(dump, marker) {
		i := strings.Index(dump, marker)
		t.Fatalf("the database holds the secret in plain text: …%s…", dump[max(0, i-200):i+len(marker)])
	}
	b.srv.Close() // every request has logged
	if out := logs.String(); strings.Contains(out, marker) {
		i := strings.Index(out, marker)
		t.Fatalf("the log holds the secret: …%s…", out[max(0, i-300):i+len(marker)])
	} else if !strings.Contains(out, "creds-3") {
		t.Fatalf("the log captured nothing of the refused requests; the check proves nothing:\n%.2000s", out)
	}
}

// Defect 2: every invented HTTP method was a new metrics label.
func TestMetricsMethodsAreAFixedSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 40 {
		method := fmt.Sprintf("X%dQZ", i)
		b.do(method, "/no-such-path", "", withoutHeader("Authorization"))
		b.do(method, "/oauth/v2/catalog", "")
	}
	m := b.expect(b.do(http.MethodGet, "/metrics", "", withoutHeader("Authorization")), http.StatusOK)
	if strings.Contains(m.raw, "QZ") {
		t.Fatalf("metrics name invented methods")
	}
	for _, want := range []string{
		`keb_http_requests_total{code="404",method="other",route="unmatched"} 40`,
		`keb_http_requests_total{code="405",method="other",route="unmatched"} 40`,
	} {
		if !strings.Contains(m.raw, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// Defect 2: APP_METRICS_ADDRESS moves /metrics to a listener of its own.
func TestMetricsOnOwnListener(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	key, err := auth.LoadOrCreateDevKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults
	cfg.DatabaseURL = pgtest.NewDatabase(t)
	cfg.DatabaseSecretKey = testSecretKey
	cfg.Engine.Workers = 0
	// Port 0: keb logs the address it listens on.
	cfg.HTTP.MetricsAddress = "127.0.0.1:0"
	logs := &logtest.Buffer{}
	log := logrus.New()
	log.SetOutput(logs)
	log.SetFormatter(&logrus.JSONFormatter{})
	a, err := app.New(ctx, cfg, log, &app.DevOptions{PublicKeys: []crypto.PublicKey{key.Public()}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	get := func(u string) (int, string) {
		for range 100 { // the listeners come up as Serve starts
			res, err := http.Get(u)
			if err == nil {
				defer res.Body.Close()
				body, _ := io.ReadAll(res.Body)
				return res.StatusCode, string(body)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("nothing answers at %s", u)
		return 0, ""
	}
	main := "http://" + ln.Addr().String()
	if code, _ := get(main + "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz: %d", code)
	}
	if code, body := get(main + "/metrics"); code != http.StatusNotFound {
		t.Fatalf("main listener still serves /metrics: %d %.200s", code, body)
	}
	var metricsAddr string
	for i := 0; metricsAddr == "" && i < 100; i++ { // Serve logs it as it starts
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "serving /metrics on its own listener" {
				metricsAddr, _ = rec["address"].(string)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if metricsAddr == "" {
		t.Fatalf("keb did not log where it serves metrics:\n%s", logs.String())
	}
	code, body := get("http://" + metricsAddr + "/metrics")
	if code != http.StatusOK || !strings.Contains(body, `keb_http_requests_total{code="200",method="GET",route="/healthz"} 1`) {
		t.Fatalf("metrics listener: %d %.500s", code, body)
	}
}

// rawRequest opens a connection to the test server and writes head (and
// body) as they are, so that a test can send a body slowly or not at all.
func (b *bundle) rawConn(head string) (net.Conn, *bufio.Reader) {
	b.t.Helper()
	conn, err := net.Dial("tcp", b.srv.Listener.Addr().String())
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { conn.Close() })
	if head != "" {
		if _, err := io.WriteString(conn, head); err != nil {
			b.t.Fatal(err)
		}
	}
	return conn, bufio.NewReader(conn)
}

// Defect 3: a client sending its body slowly held a connection forever,
// with or without a token.
func TestSlowClientsCannotHoldConnections(t *testing.T) {
	t.Parallel()
	put := func(auth string) string {
		return "PUT " + provisionPath("slow-1") + " HTTP/1.1\r\nHost: keb\r\nX-Broker-API-Version: 2.17\r\n" +
			"Content-Type: application/json\r\nContent-Length: 100000\r\n" + auth + "\r\n{\"service_id\":"
	}

	t.Run("without a token: 401 at once, connection closed, body not read", func(t *testing.T) {
		// A read timeout far beyond what the test waits: the server must
		// let go of the connection on its own, not when the timeout ends it.
		b := setupWith(t, func(c *config.Config) { c.HTTP.ReadTimeout = 10 * time.Minute }, io.Discard)
		conn, rd := b.rawConn(put(""))
		// Well under the read timeout: the answer must not wait for a body.
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		res, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("no answer before the body was sent: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || !res.Close {
			t.Fatalf("status %d, Connection close %v; want 401 and close", res.StatusCode, res.Close)
		}
		for i := 0; b.closedConns.Load() == 0; i++ {
			if i == 300 {
				t.Fatal("the server still holds the connection of the unauthenticated request")
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	b := setupWith(t, func(c *config.Config) { c.HTTP.ReadTimeout = 2 * time.Second }, io.Discard)
	t.Run("with a token: the read timeout ends it", func(t *testing.T) {
		conn, rd := b.rawConn(put("Authorization: Bearer " + b.token + "\r\n"))
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		// Drip a byte now and then, as the attacker did.
		go func() {
			for range 100 {
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
		res, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("the server never answered the dripping request: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout || !res.Close {
			t.Fatalf("status %d, close %v; want 408 and close", res.StatusCode, res.Close)
		}
	})
	if i, o := b.rows(); i != 0 || o != 0 {
		t.Fatalf("slow requests wrote %d instances, %d operations", i, o)
	}
}

// Defect 3: connections are capped; a client beyond the cap waits rather
// than taking a file descriptor.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) { c.HTTP.MaxConnections = 2 }, io.Discard)
	first, _ := b.rawConn("")
	b.rawConn("")
	client := &http.Client{Timeout: 500 * time.Millisecond}
	if res, err := client.Get(b.srv.URL + "/healthz"); err == nil {
		res.Body.Close()
		t.Fatalf("a third connection was served while two were open (status %d)", res.StatusCode)
	}
	first.Close()
	client.Timeout = time.Minute
	res, err := client.Get(b.srv.URL + "/healthz")
	if err != nil {
		t.Fatalf("served nothing after a connection closed: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", res.StatusCode)
	}
}

// paddedBody is a valid provisioning request of about size bytes, padded
// with an unknown top-level field.
func paddedBody(size int) string {
	body := provisionBody(azurePlanID, `{"name":"c1"}`, "")
	return body[:len(body)-1] + `,"padding":"` + strings.Repeat("p", max(0, size-len(body)-14)) + `"}`
}

// Defect 4: bodies of any size were accepted.
func TestBodySizeLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A client that announces its large body (Expect: 100-continue) is
	// refused by its Content-Length before it sends a byte of it.
	expect := withHeader("Expect", "100-continue")
	r := b.doWith(expectContinueClient, http.MethodPut, provisionPath("big-1"), paddedBody(2<<20), expect)
	b.expectOSBError(r, http.StatusRequestEntityTooLarge, "PayloadTooLarge")
	if !strings.Contains(r.body["description"].(string), "1048576") {
		t.Fatalf("413 does not say the limit: %s", r.raw)
	}
	b.expectOSBError(b.doWith(expectContinueClient, http.MethodPatch, provisionPath("big-1"), paddedBody(2<<20), expect), http.StatusRequestEntityTooLarge, "PayloadTooLarge")
	if i, o := b.rows(); i != 0 || o != 0 {
		t.Fatalf("oversized requests wrote %d instances, %d operations", i, o)
	}
	// Under the limit the same padding is fine.
	b.expect(b.do(http.MethodPut, provisionPath("big-2"), paddedBody(900<<10)), http.StatusAccepted)

	small := setupWith(t, func(c *config.Config) { c.HTTP.MaxBodyBytes = 4096 }, io.Discard)
	small.expectOSBError(small.do(http.MethodPut, provisionPath("big-3"), paddedBody(5000)), http.StatusRequestEntityTooLarge, "PayloadTooLarge")
	small.expect(small.do(http.MethodPut, provisionPath("big-3"), paddedBody(3000)), http.StatusAccepted)
}

// Defect 5: a rejected large request was logged whole.
func TestRejectedRequestsLogBounded(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	b := setupWith(t, nil, logs)
	huge := strings.Repeat("h", 900<<10)
	b.expect(b.do(http.MethodPut, provisionPath("log-1"), provisionBody(azurePlanID, `{"name":"`+huge+`"}`, "")), http.StatusBadRequest)
	b.expect(b.do(http.MethodPut, provisionPath("log-1"), provisionBody(azurePlanID, `{"name":"c1"}`, baseCtx+`,"note":"`+huge+`"`)), http.StatusBadRequest)
	b.srv.Close()
	out := logs.String()
	if !strings.Contains(out, "log-1") {
		t.Fatalf("the rejections were not logged at all:\n%.2000s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 8<<10 {
			t.Fatalf("a %d-byte log line: %.300s…", len(line), line)
		}
	}
}

// Defect 6: a PATCH context had no size or depth limit.
func TestPatchContextBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("ctx-1")
	before := b.snapshot("ctx-1")
	big := b.do(http.MethodPatch, provisionPath("ctx-1"), patchBody(`"note":"`+strings.Repeat("n", 70<<10)+`"`))
	b.expectOSBError(big, http.StatusBadRequest, "BadRequest")
	if !strings.Contains(big.body["description"].(string), "64 KiB") {
		t.Fatalf("description: %s", big.raw)
	}
	deep := b.do(http.MethodPatch, provisionPath("ctx-1"), patchBody(`"note":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)))
	b.expectOSBError(deep, http.StatusBadRequest, "BadRequest")
	if !strings.Contains(deep.body["description"].(string), "levels deep") {
		t.Fatalf("description: %s", deep.raw)
	}
	b.unchanged("ctx-1", before, "oversized PATCH contexts")
	// The same bound holds for PUT.
	b.expectOSBError(b.do(http.MethodPut, provisionPath("ctx-2"), provisionBody(azurePlanID, `{"name":"c1"}`,
		baseCtx+`,"note":`+strings.Repeat("{\"a\":", 40)+"1"+strings.Repeat("}", 40))), http.StatusBadRequest, "BadRequest")
}

// Defects 7 and 8: NUL bytes, invalid UTF-8 and very long values reached
// PostgreSQL and came back as 500.
func TestUnstorableValuesAre400(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("good-1")
	long := strings.Repeat("k", 5000)
	cursor := func(id string) string {
		return base64.RawURLEncoding.EncodeToString([]byte("2026-01-01T00:00:00Z|" + id))
	}
	cases := []struct{ method, path, body string }{}
	for _, id := range []string{"a%00b", "a%FFb", "%C0%80", long} {
		cases = append(cases,
			struct{ method, path, body string }{http.MethodPut, provisionPath(id), provisionBody(azurePlanID, `{"name":"c1"}`, "")},
			struct{ method, path, body string }{http.MethodGet, instancePath(id), ""},
			struct{ method, path, body string }{http.MethodPatch, provisionPath(id), patchBody(`"active":false`)},
			struct{ method, path, body string }{http.MethodDelete, deprovisionPath(id, azurePlanID), ""},
			struct{ method, path, body string }{http.MethodGet, instancePath(id) + "/last_operation", ""},
			struct{ method, path, body string }{http.MethodGet, instancePath("good-1") + "/last_operation?operation=" + id, ""},
			struct{ method, path, body string }{http.MethodPut, "/oauth/" + id + "/v2/service_instances/good-2?accepts_incomplete=true", provisionBody(azurePlanID, `{"name":"c1"}`, "")},
		)
	}
	for _, f := range []string{"account", "subaccount", "instance_id", "runtime_id", "region", "plan", "shoot", "state", "kyma_state", "op_detail", "page", "page_size",
		"bindings", "with_bindings", "actions", "expired", "runtime_config", "kyma_config", "cluster_config", "gardener_config"} {
		for _, v := range []string{"a%00b", "a%FFb", url.QueryEscape(long)} {
			cases = append(cases, struct{ method, path, body string }{http.MethodGet, "/info/runtimes?" + f + "=" + v, ""})
		}
	}
	for _, id := range []string{"a\x00b", "a\xffb", long} {
		cases = append(cases, struct{ method, path, body string }{http.MethodGet, "/runtimes?next=" + cursor(id), ""})
	}
	for _, tc := range cases {
		r := b.do(tc.method, tc.path, tc.body)
		if r.status != http.StatusBadRequest || r.body["error"] != "BadRequest" || r.body["description"] == "" {
			t.Errorf("%s %.120s: %d %.300s; want 400 BadRequest", tc.method, tc.path, r.status, r.raw)
		}
	}
	if i, o := b.rows(); i != 1 || o != 1 {
		t.Fatalf("refused requests wrote: %d instances, %d operations", i, o)
	}
}

// Defect 9: IDs that can never be provisioned, and unknown platform
// regions, were accepted.
func TestInstanceIDAndRegionSyntax(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := provisionBody(azurePlanID, `{"name":"c1"}`, "")
	for _, id := range []string{"with%20space", "emoji-%F0%9F%98%80", "new%0Aline", strings.Repeat("a", 64), "-leading", "trailing.", "a%2Bb"} {
		r := b.do(http.MethodPut, provisionPath(id), body)
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(r.body["description"].(string), "instance ID") {
			t.Errorf("%s: %s", id, r.raw)
		}
	}
	if i, _ := b.rows(); i != 0 {
		t.Fatalf("%d instances stored from refused IDs", i)
	}
	for i, id := range []string{uuid.NewString(), strings.Repeat("a", 63), "A.b_c-9"} {
		b.expect(b.do(http.MethodPut, provisionPath(id), provisionBody(azurePlanID, `{"name":"c1"}`,
			fmt.Sprintf(`"globalaccount_id":"ga-%d","subaccount_id":"sa","user_id":"u"`, i))), http.StatusAccepted)
	}
	for _, region := range []string{"mars", "cf-eu90", "CF-EU10", "cf_eu10", strings.Repeat("cf-eu10", 6)} {
		for _, method := range []string{http.MethodPut, http.MethodGet} {
			rb := ""
			if method == http.MethodPut {
				rb = body
			}
			r := b.do(method, "/oauth/"+region+"/v2/service_instances/r-1?accepts_incomplete=true", rb)
			b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
			if !strings.Contains(r.body["description"].(string), "platform region") {
				t.Errorf("%s %s: %s", method, region, r.raw)
			}
		}
	}
	b.expect(b.do(http.MethodPut, "/oauth/cf-eu20/v2/service_instances/r-2?accepts_incomplete=true", body), http.StatusAccepted)
}

// Defect 10: huge page numbers wrapped or gave 500.
func TestRuntimesPageBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("page-1")
	for _, p := range []string{"9223372036854775807", "9223372036854775808", "4611686018427387904", "1000001", "0", "-1", "1e3"} {
		b.expectOSBError(b.do(http.MethodGet, "/info/runtimes?page_size=100&page="+p, ""), http.StatusBadRequest, "BadRequest")
	}
	for _, p := range []string{"2", "1000000"} {
		r := b.expect(b.do(http.MethodGet, "/info/runtimes?page_size=100&page="+p, ""), http.StatusOK)
		if d := r.body["data"].([]any); len(d) != 0 || r.body["totalCount"] != float64(1) {
			t.Fatalf("page %s beyond the end: %s", p, r.raw)
		}
	}
	r := b.expect(b.do(http.MethodGet, "/info/runtimes?page=1", ""), http.StatusOK)
	if d := r.body["data"].([]any); len(d) != 1 {
		t.Fatalf("page 1: %s", r.raw)
	}
}

// Issue 15: unknown query parameters of the listing are refused, not
// ignored (a misspelt filter listed everything).
func TestRuntimesUnknownParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/info/runtimes?acount=ga-1", "/runtimes?instanceID=x&plan=trial", "/runtimes?page_size=1&pagesize=2"} {
		r := b.do(http.MethodGet, path, "")
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(r.body["description"].(string), "unknown query parameters") {
			t.Errorf("%s: %s", path, r.raw)
		}
	}
}

// Defect 11: trailing data after the body and malformed API versions were
// accepted.
func TestStrictBodyAndVersion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := provisionBody(azurePlanID, `{"name":"c1"}`, "")
	for _, trailing := range []string{" x", "{}", `{"service_id":"x"}`, " null", "]"} {
		r := b.do(http.MethodPut, provisionPath("strict-1"), body+trailing)
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(r.body["description"].(string), "after its JSON object") {
			t.Errorf("trailing %q: %s", trailing, r.raw)
		}
	}
	for _, v := range []string{"2.-1", "2.14banana", "2.14 extra", "02.14", "2.", "2", "2.14.1", "3.0", "+2.14", "2.0x10"} {
		r := b.do(http.MethodGet, "/oauth/v2/catalog", "", withHeader("X-Broker-API-Version", v))
		b.expectOSBError(r, http.StatusPreconditionFailed, "PreconditionFailed")
	}
	b.expect(b.do(http.MethodPut, provisionPath("strict-1"), body+"\n"), http.StatusAccepted)
	if i, o := b.rows(); i != 1 || o != 1 {
		t.Fatalf("%d instances, %d operations; want the one accepted", i, o)
	}
}

// Defect 12: answers lacked nosniff and no-store.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The catalog names no account: it may be kept, and is revalidated with
	// its ETag (private, no-cache).
	if r := b.do(http.MethodGet, "/oauth/v2/catalog", ""); r.header.Get("X-Content-Type-Options") != "nosniff" ||
		r.header.Get("Cache-Control") != "private, no-cache" || r.header.Get("ETag") == "" {
		t.Errorf("catalog: status %d: headers %v", r.status, r.header)
	}
	for _, r := range []response{
		b.do(http.MethodPut, provisionPath("hdr-1"), provisionBody(azurePlanID, `{"name":"c1"}`, "")),
		b.do(http.MethodGet, instancePath("hdr-1")+"/last_operation", ""),
		b.do(http.MethodGet, "/info/runtimes", ""),
		b.do(http.MethodGet, "/runtimes", "", withoutHeader("Authorization")),
		b.do(http.MethodGet, "/nowhere", ""),
	} {
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("status %d: headers %v", r.status, r.header)
		}
	}
}

// Defect 14: brokerapi's own answers escaped keb's error shape.
func TestEveryOSBErrorHasKebShape(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("shape-1")
	cases := []struct {
		name, method, path, body string
		status                   int
		names                    []string
	}{
		{"unknown plan", http.MethodPut, provisionPath("shape-2"), provisionBody("plan-x", `{"name":"c1"}`, ""), 400,
			[]string{`"plan-x"`, azurePlanID, trialPlanID}},
		{"unknown service", http.MethodPut, provisionPath("shape-2"), strings.Replace(provisionBody(azurePlanID, `{"name":"c1"}`, ""), serviceID, "svc-x", 1), 400,
			[]string{`"svc-x"`, serviceID}},
		{"no service_id nor plan_id", http.MethodPut, provisionPath("shape-2"), `{"context":{}}`, 400, []string{"service_id", "plan_id"}},
		{"malformed JSON", http.MethodPut, provisionPath("shape-2"), `{"service_id": "x",`, 400, []string{"not a JSON object"}},
		{"body not an object", http.MethodPut, provisionPath("shape-2"), `["a"]`, 400, []string{"not a JSON object"}},
		{"wrong type", http.MethodPut, provisionPath("shape-2"), `{"service_id": 5, "plan_id": "p"}`, 400, []string{"service_id", "string"}},
		{"empty body", http.MethodPut, provisionPath("shape-2"), ``, 400, []string{"empty"}},
		{"PATCH unknown service", http.MethodPatch, provisionPath("shape-1"), `{"service_id":"svc-x"}`, 400, []string{`"svc-x"`}},
		{"PATCH malformed", http.MethodPatch, provisionPath("shape-1"), `{"service_id":`, 400, []string{"not a JSON object"}},
		{"PATCH wrong type", http.MethodPatch, provisionPath("shape-1"), `{"service_id":"` + serviceID + `","plan_id":5}`, 400, []string{"plan_id"}},
		{"DELETE without ids", http.MethodDelete, provisionPath("shape-1"), "", 400, []string{"service_id", "plan_id"}},
		{"DELETE without plan_id", http.MethodDelete, provisionPath("shape-1") + "&service_id=" + serviceID, "", 400, []string{"plan_id"}},
		{"DELETE unknown plan", http.MethodDelete, deprovisionPath("shape-1", "plan-x"), "", 400, []string{`"plan-x"`, azurePlanID}},
		{"DELETE another plan", http.MethodDelete, deprovisionPath("shape-1", trialPlanID), "", 400, []string{azurePlanID, "azure", trialPlanID}},
		{"GET instance before 2.14", http.MethodGet, instancePath("shape-1"), "", 412, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := []reqOpt{}
			if tc.status == 412 {
				opts = append(opts, withHeader("X-Broker-API-Version", "2.13"))
			}
			if tc.body != "" || tc.method == http.MethodPut {
				opts = append(opts, withHeader("Content-Type", "application/json"))
			}
			r := b.do(tc.method, tc.path, tc.body, opts...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.raw)
			}
			key, _ := r.body["error"].(string)
			desc, _ := r.body["description"].(string)
			if key == "" || desc == "" {
				t.Fatalf("not an OSB error body: %s", r.raw)
			}
			for _, n := range tc.names {
				if !strings.Contains(desc, n) {
					t.Errorf("description does not name %s: %s", n, desc)
				}
			}
		})
	}
	// The DELETE naming another plan deprovisioned nothing.
	if st := b.runtimeStatus("shape-1"); st["state"] != "succeeded" {
		t.Fatalf("after refused DELETEs the instance is %v", st)
	}
	if i, o := b.rows(); i != 1 || o != 1 {
		t.Fatalf("%d instances, %d operations after refused requests", i, o)
	}
}

// nulls lists the paths of every null in a decoded JSON document.
func nulls(path string, v any) []string {
	switch t := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		var out []string
		for k, x := range t {
			out = append(out, nulls(path+"."+k, x)...)
		}
		return out
	case []any:
		var out []string
		for i, x := range t {
			out = append(out, nulls(fmt.Sprintf("%s[%d]", path, i), x)...)
		}
		return out
	}
	return nil
}

// Defect 15: the catalog published null schemas.
func TestCatalogHasNoNulls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	if n := nulls("", r.body); len(n) > 0 {
		t.Fatalf("catalog has nulls at %v", n)
	}
	plans := r.body["services"].([]any)[0].(map[string]any)["plans"].([]any)
	for _, p := range plans {
		schemas := p.(map[string]any)["schemas"].(map[string]any)
		if _, has := schemas["service_binding"]; has {
			t.Errorf("plan %v publishes an empty binding schema", p.(map[string]any)["name"])
		}
		create := schemas["service_instance"].(map[string]any)["create"].(map[string]any)["parameters"].(map[string]any)
		if create["properties"] == nil {
			t.Errorf("plan %v lost its create schema", p.(map[string]any)["name"])
		}
	}
}

// Defect 16: PATCH answered a stale dashboard_url.
func TestPatchDashboardURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("dash-1")
	current := "https://console.c-rt-1.example.com"
	upd := b.do(http.MethodPatch, provisionPath("dash-1"), patchBody(credsB))
	b.accepted(upd)
	if upd.body["dashboard_url"] != current {
		t.Fatalf("credentials update on a running runtime: %s", upd.raw)
	}
	b.finish(upd.body["operation"].(string), "succeeded")

	suspend := b.do(http.MethodPatch, provisionPath("dash-1"), patchBody(`"active":false`))
	b.finish(b.accepted(suspend), "succeeded")
	if _, has := suspend.body["dashboard_url"]; has {
		t.Fatalf("suspension answers a dashboard: %s", suspend.raw)
	}
	again := b.expect(b.do(http.MethodPatch, provisionPath("dash-1"), patchBody(`"active":false`)), http.StatusOK)
	if _, has := again.body["dashboard_url"]; has {
		t.Fatalf("PATCH of a suspended instance answers a dashboard: %s", again.raw)
	}
	resume := b.do(http.MethodPatch, provisionPath("dash-1"), patchBody(`"active":true`))
	b.accepted(resume)
	if _, has := resume.body["dashboard_url"]; has {
		t.Fatalf("resumption answers the deleted cluster's dashboard: %s", resume.raw)
	}
}

// TestCatalogConditionalGet: over HTTP, a platform revalidating its catalog
// gets a 304 without a body (checked against docs/openapi.yaml like every
// answer here) only for the entity tag of what it would be served: another
// platform region's or encoding's tag, and hostile If-None-Match lines, get
// the catalog, never an error.
func TestCatalogConditionalGet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	plain := withHeader("Accept-Encoding", "identity")
	first := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", "", plain), http.StatusOK)
	etag := first.header.Get("ETag")
	if r := b.do(http.MethodGet, "/oauth/v2/catalog", "", plain, withHeader("If-None-Match", etag)); r.status != http.StatusNotModified ||
		r.raw != "" || r.header.Get("ETag") != etag || r.header.Get("Cache-Control") != "private, no-cache" {
		t.Fatalf("If-None-Match %s: status %d, headers %v, body %.100q; want 304, no body", etag, r.status, r.header, r.raw)
	}
	// The default platform region is cf-eu10: the same catalog, the same tag.
	if r := b.do(http.MethodGet, "/oauth/cf-eu10/v2/catalog", "", plain, withHeader("If-None-Match", etag)); r.status != http.StatusNotModified {
		t.Errorf("cf-eu10 with the default catalog's tag: status %d, want 304", r.status)
	}
	// An EU access platform region has a catalog of its own, and a tag of its own.
	eu := b.expect(b.do(http.MethodGet, "/oauth/cf-eu11/v2/catalog", "", plain, withHeader("If-None-Match", etag)), http.StatusOK)
	if eu.header.Get("ETag") == etag || eu.raw == first.raw {
		t.Errorf("cf-eu11 answered the default catalog's tag with the same tag or body")
	}
	// Go's client asks for gzip itself (and unzips): the gzip body has its
	// own tag, and the plain body's gets it in full.
	gz := b.do(http.MethodGet, "/oauth/v2/catalog", "", withHeader("If-None-Match", etag))
	if gz.status != http.StatusOK || gz.raw != first.raw || gz.header.Get("ETag") == etag || gz.header.Get("ETag") == "" {
		t.Errorf("gzip with the plain body's tag: status %d, ETag %q; want 200, the catalog, a tag of its own", gz.status, gz.header.Get("ETag"))
	}
	if r := b.do(http.MethodGet, "/oauth/v2/catalog", "", withHeader("If-None-Match", gz.header.Get("ETag"))); r.status != http.StatusNotModified {
		t.Errorf("gzip with its own tag: status %d, want 304", r.status)
	}
	hostile := []string{strings.Repeat(",", 4000), strings.Repeat(`W/"x", `, 900), `"` + strings.Repeat("q", 6000),
		`W/`, `"`, `""`, `*x`, `**`, `W/*`, "\"\xff\xfe\"", `"` + etag, etag[1:], `"a" "b" ` + etag, strings.ToLower(etag)}
	for _, inm := range hostile {
		if inm == etag {
			continue
		}
		r := b.do(http.MethodGet, "/oauth/v2/catalog", "", plain, withHeader("If-None-Match", inm))
		if r.status != http.StatusOK || r.raw != first.raw {
			t.Errorf("If-None-Match %.60q: status %d; want 200 with the catalog", inm, r.status)
		}
	}
}

// TestHostileInputs is the permanent hostile-client suite: several hundred
// requests generated from the defect lists of both hardening rounds (issues
// 8 and 23), on the OSB routes and on every other one (console,
// orchestrations, bindings, listings, `keb dev`'s endpoints), each of which
// must get a 4xx with an error body in its route's documented shape and
// change nothing in the database.
func TestHostileInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("victim-1")
	before := b.databaseText()

	badIDs := []string{"a%00b", "a%FFb", "%C0%AF", "sp%20ace", "nl%0A", "tab%09", "%F0%9F%98%80", strings.Repeat("x", 64),
		strings.Repeat("y", 300), strings.Repeat("z", 5000), "-a", "a-", "a%2Fb", "%25"}
	rng := rand.New(rand.NewPCG(8, 8))
	for range 8 {
		raw := make([]byte, 1+rng.IntN(40))
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		badIDs = append(badIDs, url.PathEscape(string(raw))+"%00")
	}
	valid := provisionBody(azurePlanID, `{"name":"c1"}`, "")
	badBodies := []string{
		``, ` `, `null`, `[]`, `"s"`, `1`, `{`, `{"service_id":`, valid + `x`, valid + valid, valid[:len(valid)/2],
		`{"service_id":5,"plan_id":"` + azurePlanID + `"}`, `{"service_id":"` + serviceID + `","plan_id":[]}`,
		`{"service_id":""}`, `{"plan_id":"` + azurePlanID + `"}`,
		`{"SERVICE_ID":"` + serviceID + `","plan_id":"` + azurePlanID + `"}`,
		`{"service_id":"` + serviceID + `","Plan_Id":"` + azurePlanID + `"}`,
		`{"service_id":"svc\u0000","plan_id":"` + azurePlanID + `"}`,
		`{"service_id":"` + serviceID + `","plan_id":"` + azurePlanID + `\u0000"}`,
		strings.Replace(valid, `"context":{`, `"context":{"SM_OPERATOR_CREDENTIALS":{"clientsecret":"x"},`, 1),
		strings.Replace(valid, `"context":{`, `"context":{"Sm_Operator_Credentials":{"clientsecret":"x"},"sm_operator_credentials":{"clientid":"a","clientsecret":"b","sm_url":"c","url":"d"},`, 1),
		strings.Replace(valid, `"context":{`, `"context":{"sm_operator_credentials":{"clientsecret":"x"},`, 1),
		strings.Replace(valid, `"context":{`, `"context":{"deep":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`,`, 1),
		strings.Replace(valid, `"context":{`, `"context":{"big":"`+strings.Repeat("b", 70<<10)+`",`, 1),
		strings.Replace(valid, `"context":{`, `"context":{"user_id":5,`, 1),
		strings.Replace(valid, `"context":{`, `"context":"string","x":{`, 1),
		strings.Replace(valid, `{"name":"c1"}`, `{"name":"c1","region":"mars\u0000"}`, 1),
		strings.Replace(valid, `{"name":"c1"}`, `{"name":"`+strings.Repeat("n", 70<<10)+`"}`, 1),
		strings.Replace(valid, `{"name":"c1"}`, `[1,2]`, 1),
		strings.Replace(valid, `{"name":"c1"}`, `{"name":"c1","autoScalerMin":1e400}`, 1),
		"\xff\xfe{}", "{\"service_id\":\"\xff\"}",
		// Refused before a byte of it is read: far more than the socket
		// buffers take, so writing it fails once keb closes.
		strings.Replace(valid, `"context":{`, `"context":{"huge":"`+strings.Repeat("h", 8<<20)+`",`, 1),
	}
	// Issue 38's parameter rules: OIDC issuers without a host and repeated
	// claims, networks no cluster can use or too small for its nodes.
	for _, params := range []string{
		`{"name":"c1","oidc":{"list":[{"clientID":"c","issuerURL":"https://:443","signingAlgs":["RS256"]}]}}`,
		`{"name":"c1","oidc":{"clientID":"c","issuerURL":"https://i.example.com","requiredClaims":["aud=a","aud=b"]}}`,
		`{"name":"c1","networking":{"nodes":"127.0.0.0/16"}}`, `{"name":"c1","networking":{"nodes":"0.0.0.0/16"}}`,
		`{"name":"c1","networking":{"nodes":"10.180.0.0/16","pods":"169.254.0.0/16"}}`,
		`{"name":"c1","networking":{"nodes":"10.180.0.0/16","services":"224.0.0.0/16"}}`,
		`{"name":"c1","networking":{"nodes":"255.255.254.0/23"}}`,
		`{"name":"c1","networking":{"nodes":"10.180.0.0/16","pods":"10.100.0.1/32"}}`,
		`{"name":"c1","networking":{"nodes":"10.180.0.0/16","services":"10.100.0.1/32"}}`,
		`{"name":"c1","autoScalerMax":20.0,"networking":{"nodes":"10.180.0.0/16","pods":"10.100.0.0/20"}}`,
	} {
		badBodies = append(badBodies, strings.Replace(valid, `{"name":"c1"}`, params, 1))
	}
	type req = hostileReq
	var reqs []req
	for _, id := range badIDs {
		reqs = append(reqs,
			req{method: http.MethodPut, path: provisionPath(id), body: valid},
			req{method: http.MethodPatch, path: provisionPath(id), body: patchBody(`"active":false`)},
			req{method: http.MethodDelete, path: deprovisionPath(id, azurePlanID), body: ""},
			req{method: http.MethodGet, path: instancePath(id), body: ""},
			req{method: http.MethodGet, path: instancePath(id) + "/last_operation", body: ""},
			req{method: http.MethodGet, path: instancePath("victim-1") + "/last_operation?operation=" + id, body: ""},
			req{method: http.MethodPut, path: "/oauth/" + id + "/v2/service_instances/victim-2?accepts_incomplete=true", body: valid},
			req{method: http.MethodDelete, path: "/oauth/" + id + "/v2/service_instances/victim-1?accepts_incomplete=true&service_id=" + serviceID + "&plan_id=" + azurePlanID, body: ""},
			req{method: http.MethodPut, path: "/expire/service_instance/" + id, body: ""},
		)
	}
	for _, body := range badBodies {
		reqs = append(reqs,
			req{method: http.MethodPut, path: provisionPath("victim-2"), body: body},
			req{method: http.MethodPatch, path: provisionPath("victim-1"), body: body},
		)
	}
	for _, q := range []string{"service_id=&plan_id=", "service_id=" + serviceID, "plan_id=" + azurePlanID,
		"service_id=" + serviceID + "&plan_id=" + trialPlanID, "service_id=x&plan_id=" + azurePlanID,
		"service_id=" + serviceID + "&plan_id=%00", "service_id=%FF&plan_id=" + azurePlanID} {
		reqs = append(reqs, req{method: http.MethodDelete, path: provisionPath("victim-1") + "&" + q, body: ""})
	}
	for _, name := range []string{"account", "subaccount", "instance_id", "runtime_id", "region", "plan", "shoot", "state", "kyma_state", "op_detail", "page", "page_size", "next", "bogus", "Account", "%00"} {
		for _, v := range []string{"%00", "%FF", "a%00", url.QueryEscape(strings.Repeat("v", 600)), "-1", "99999999999999999999", "%C0%80"} {
			if (name == "state" || name == "kyma_state" || name == "op_detail" || name == "page" || name == "page_size" || name == "next") || strings.Contains(v, "%") || len(v) > 100 || name == "bogus" || name == "Account" || name == "%00" {
				reqs = append(reqs, req{method: http.MethodGet, path: "/info/runtimes?" + name + "=" + v, body: ""})
			}
		}
	}
	for _, body := range []string{`{`, `[]`, `{"service_id":"x"} x`, `{"a":1,"a":2}`, `{"service_id":"` + serviceID + `","plan_id":"` + azurePlanID + `"}`} {
		reqs = append(reqs, req{method: http.MethodPut, path: instancePath("victim-1") + "/service_bindings/b-1", body: body})
	}
	reqs = append(reqs, req{method: http.MethodGet, path: instancePath("victim-1") + "/service_bindings/b-1", body: ""},
		req{method: http.MethodDelete, path: instancePath("victim-1") + "/service_bindings/b-1?service_id=" + serviceID + "&plan_id=" + azurePlanID, body: ""},
		req{method: http.MethodGet, path: instancePath("victim-1") + "/service_bindings/b-1/last_operation?operation=%00", body: ""})
	for _, m := range []string{"PROPFIND", "TRACE", "X", "get"} {
		reqs = append(reqs, req{method: m, path: instancePath("victim-1"), body: ""})
	}
	reqs = append(reqs, hostileOperatorRequests(b, badIDs, badBodies)...)
	if len(reqs) < 800 {
		t.Fatalf("only %d hostile requests generated", len(reqs))
	}
	versions := []string{"2.17", "2.14banana", ""}
	for i, rq := range reqs {
		opts := rq.opts
		if i%17 == 0 {
			opts = append(opts, withHeader("X-Broker-API-Version", versions[i%len(versions)]))
		}
		r := b.doRaw(rq.method, rq.path, rq.body, opts...)
		if r.status >= 500 || r.status < 400 {
			t.Errorf("%s %.100q %.200q: status %d: %.300s", rq.method, rq.path, rq.body, r.status, r.raw)
			continue
		}
		if r.status == http.StatusGone && r.raw == "{}\n" {
			continue // OSB's answer to a DELETE of what is gone
		}
		if err := rq.shape.check(r); err != nil {
			t.Errorf("%s %.100q %.100q: %d: %v: %.300s", rq.method, rq.path, rq.body, r.status, err, r.raw)
		}
	}
	if after := b.databaseText(); after != before {
		t.Fatalf("hostile requests changed the database")
	}
	t.Logf("%d hostile requests, all refused with error bodies of their routes' shapes", len(reqs))
}

// hostileReq is one request of TestHostileInputs and the shape its route
// answers errors in.
type hostileReq struct {
	method, path, body string
	opts               []reqOpt
	shape              answerShape
}

// answerShape is how a route says what is wrong (docs/openapi.yaml).
type answerShape int

const (
	// OSB's {"error", "description"}: the OSB routes, the operators' API,
	// and every route's refusals before its handler (Refused).
	shapeOSB answerShape = iota
	// The console's HTML page saying what is wrong, or a refusal in OSB's
	// shape.
	shapeConsole
	// An error of keb dev's endpoints: {"error"} with a description
	// (OAuth2's error_description on the token endpoints).
	shapeDev
)

func (s answerShape) check(r response) error {
	if s == shapeConsole && strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		if !strings.Contains(r.raw, "<html") || !strings.Contains(r.raw, `class="error"`) {
			return errors.New("a console page that says nothing is wrong")
		}
		return nil
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.raw), &body); err != nil {
		return fmt.Errorf("body not JSON: %w", err)
	}
	if k, _ := body["error"].(string); k == "" {
		return errors.New("no error key")
	}
	d, _ := body["description"].(string)
	if od, _ := body["error_description"].(string); s == shapeDev && d == "" {
		d = od
	}
	if d == "" {
		return errors.New("no description")
	}
	return nil
}

// hostileOperatorRequests are the hostile requests of the routes added
// after the first hardening round: the console, orchestrations, bindings,
// the listings' parsing, and keb dev's token endpoint and CIS stand-in.
func hostileOperatorRequests(b *bundle, badIDs, badBodies []string) []hostileReq {
	type req = hostileReq
	var reqs []req
	cookie := withHeader("Cookie", "keb_console_token="+b.mint(auth.ScopeCLDRead))
	upgrade := withHeader("Authorization", "Bearer "+b.mint(auth.ScopeUpgradeRead, auth.ScopeUpgradeWrite))
	form := withHeader("Content-Type", formType)
	login := url.Values{"token": {b.mint(auth.ScopeCLDRead)}}.Encode()
	badQueries := []string{"account=%00", "account=%FF", "account=ga;x", "state=all&account=no-such;1", "plan=azure%zz",
		"plan=%", "page=0", "page=-1", "page_size=5000", "page=1e3", "next=%00", "next=bm90LWEtY3Vyc29y", "bogus=1",
		"Account=ga-1", "%00=1", "instance_id=" + strings.Repeat("i", 600), strings.Repeat("state=all&", 101) + "state=all"}

	// Listings and the console's table read through the same parser (/console
	// without window moves such a query to /console/runtimes: TestConsoleOverviewAndPages).
	for _, q := range badQueries {
		reqs = append(reqs, req{method: http.MethodGet, path: "/runtimes?" + q},
			req{method: http.MethodGet, path: "/console/runtimes?" + q, opts: []reqOpt{cookie}, shape: shapeConsole})
	}
	// The console: the overview's window, the orchestrations', pool's and
	// events' pages (their parameters are the APIs').
	for _, q := range []string{"window=year", "window=", "window=day&window=week", "window=%00", "window=%FF", "window=day&Window=day",
		"window=" + strings.Repeat("w", 600)} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/console?" + q, opts: []reqOpt{cookie}, shape: shapeConsole})
	}
	for _, q := range []string{"state=bogus", "state=%00", "page=0", "page=x", "page_size=5000", "x=1", "state=pending&state=%FF"} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/console/orchestrations?" + q, opts: []reqOpt{cookie}, shape: shapeConsole},
			req{method: http.MethodGet, path: "/console/orchestrations/o-1?" + q, opts: []reqOpt{cookie}, shape: shapeConsole})
	}
	for _, q := range []string{"state=bogus", "state=%00", "type=" + strings.Repeat("t", 100), "x=1", "type=a&type=b"} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/console/pool?" + q, opts: []reqOpt{cookie}, shape: shapeConsole})
	}
	for _, q := range []string{"bogus=1", "instance_ids=a,,b", "instance_ids=%00", "runtime_ids=a%0Ab", "operation_ids=" + strings.Repeat("o", 300),
		"instance_ids=" + strings.Repeat("i,", 100) + "i", "instance_ids=a&page=0", "instance_ids=a&page_size=1001", "instance_ids=%FF"} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/console/events?" + q, opts: []reqOpt{cookie}, shape: shapeConsole})
	}
	for _, id := range badIDs {
		reqs = append(reqs, req{method: http.MethodGet, path: "/console/instances/" + id, opts: []reqOpt{cookie}, shape: shapeConsole},
			req{method: http.MethodGet, path: "/console/orchestrations/" + id, opts: []reqOpt{cookie}, shape: shapeConsole})
	}
	for _, body := range []string{"", "token=", "token=a&token=b", "token=%zz", "token=a;b", "x=1", "token=a&next=/console&next=/x",
		"token=" + strings.Repeat("t", 20<<10), "token=%00", "token=not-a-token", "token=" + url.QueryEscape(b.mint(auth.ScopeBrokerWrite)),
		login + "&extra=1", "\xff\xfe", `{"token":"x"}`} {
		reqs = append(reqs, req{method: http.MethodPost, path: "/console/login", body: body, opts: []reqOpt{form}, shape: shapeConsole})
	}
	for _, ct := range []string{"application/json", "multipart/form-data; boundary=x", "text/plain", "", "application/x-www-form-urlencoded; charset"} {
		reqs = append(reqs, req{method: http.MethodPost, path: "/console/login", body: login,
			opts: []reqOpt{withHeader("Content-Type", ct)}, shape: shapeConsole})
	}
	for _, cross := range []reqOpt{withHeader("Origin", "https://evil.example"), withHeader("Sec-Fetch-Site", "cross-site"),
		withHeader("Origin", "null")} {
		reqs = append(reqs, req{method: http.MethodPost, path: "/console/login", body: login, opts: []reqOpt{form, cross}, shape: shapeConsole},
			req{method: http.MethodPost, path: "/console/logout", opts: []reqOpt{cookie, cross}, shape: shapeConsole})
	}
	for _, path := range []string{"/console/%2e%2e/healthz", "/console/instances/..", "/console/login?next=x;y", "/console/logout?a=%zz"} {
		reqs = append(reqs, req{method: http.MethodPost, path: path, body: login, opts: []reqOpt{form}, shape: shapeConsole})
	}

	// People's kubeconfigs: IDs, tokens without the scope, origins not
	// allowed (the bundle allows https://cockpit.example).
	kubeconfigToken := withHeader("Authorization", "Bearer "+b.mint(auth.ScopeKubeconfigRead))
	for _, id := range append(badIDs, "..", "%2e%2e", "no-such-instance", "victim-1") {
		reqs = append(reqs, req{method: http.MethodGet, path: "/kubeconfig/" + id, opts: []reqOpt{kubeconfigToken}},
			req{method: http.MethodGet, path: "/kubeconfig/" + id, opts: []reqOpt{withHeader("Origin", "https://cockpit.example")}})
	}
	for _, opts := range [][]reqOpt{{withoutHeader("Authorization")}, {withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))},
		{withoutHeader("Authorization"), withHeader("Origin", "https://evil.example")}, {withoutHeader("Authorization"), withHeader("Origin", "null")},
		{withoutHeader("Authorization"), withHeader("Origin", "https://cockpit.example.evil.example")},
		{withHeader("Authorization", "Bearer not-a-token"), withHeader("Origin", "https://evil.example")}} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/kubeconfig/victim-1", opts: opts},
			req{method: http.MethodOptions, path: "/kubeconfig/victim-1", opts: opts})
	}
	for _, q := range []string{"x=%zz", "a;b", "name=" + strings.Repeat("n", 600)} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/kubeconfig/victim-1?" + q, opts: []reqOpt{kubeconfigToken}})
	}

	// Events: filters, IDs, pages.
	for _, q := range []string{"", "bogus=1", "instance_ids=", "instance_ids=a,,b", "instance_ids=%00", "runtime_ids=a%0Ab",
		"operation_ids=" + strings.Repeat("o", 300), "instance_ids=" + strings.Repeat("i,", 100) + "i", "instance_ids=a&page=0",
		"instance_ids=a&page=x", "instance_ids=a&page_size=1001", "instance_ids=a&page_size=1&page_size=2", "instance_ids=a;b",
		"Instance_ids=a", "instance_ids=%FF", "page=1", "instance_ids=a&page=99999999999"} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/events?" + q, opts: []reqOpt{withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))}})
	}
	reqs = append(reqs, req{method: http.MethodGet, path: "/events?instance_ids=victim-1", opts: []reqOpt{withoutHeader("Authorization")}},
		req{method: http.MethodGet, path: "/events?instance_ids=victim-1", opts: []reqOpt{upgrade}})

	// Orchestrations: IDs, queries and bodies.
	for _, id := range append(badIDs, "%c3%28", "%ed%a0%80", "..", "%2e") {
		for _, rq := range []req{
			{method: http.MethodGet, path: "/orchestrations/" + id},
			{method: http.MethodGet, path: "/orchestrations/" + id + "/operations"},
			{method: http.MethodGet, path: "/orchestrations/" + id + "/operations/op-1"},
			{method: http.MethodGet, path: "/orchestrations/o-1/operations/" + id},
			{method: http.MethodPut, path: "/orchestrations/" + id + "/cancel"},
			{method: http.MethodPut, path: "/orchestrations/" + id + "/retry"},
		} {
			rq.opts = []reqOpt{upgrade}
			reqs = append(reqs, rq)
		}
	}
	for _, q := range []string{"state=bogus", "state=pending,bogus", "page=0", "page=x", "page_size=0", "page_size=5000", "page_size=1;page=2",
		"x=1", "state=%00", "page=%zz"} {
		reqs = append(reqs, req{method: http.MethodGet, path: "/orchestrations?" + q, opts: []reqOpt{upgrade}},
			req{method: http.MethodGet, path: "/orchestrations/o-1/operations?" + q, opts: []reqOpt{upgrade}})
	}
	const targets = `"targets":{"include":[{"target":"all"}]}`
	upgradeBodies := append([]string{
		`{}`, `{"targets":{}}`, `{"targets":{"include":[]}}`, `{"targets":{"include":[{}]}}`,
		`{` + targets + `,"dryRun":true,"dryRun":false}`, `{` + targets + `,"DryRun":false}`, `{` + targets + `,"dryRun":null}`,
		`{` + targets + `,` + targets + `}`, `{"Targets":{"include":[{"target":"all"}]}}`, `{` + targets + `,"dryRun":"false"}`,
		`{"targets":{"include":[{"target":"some"}]}}`, `{"targets":{"include":[{"globalAccount":"ga\u0000"}]}}`,
		`{"targets":{"include":[{"globalAccount":"` + strings.Repeat("g", 300) + `"}]}}`,
		`{` + targets + `,"strategy":{"type":"serial"}}`, `{` + targets + `,"strategy":{"schedule":"later"}}`,
		`{` + targets + `,"strategy":{"parallel":{"workers":-1}}}`, `{` + targets + `,"strategy":{"parallel":{"workers":1e9}}}`,
		`{` + targets + `,"kyma":{"channel":"bogus"}}`, `{` + targets + `,"kyma":{"channel":"<b>x</b>"}}`,
		`{` + targets + `,"kyma":{"version":"../../../../etc/passwd"}}`, `{` + targets + `,"kyma":{"version":"2.20.0\u0001"}}`,
		`{` + targets + `,"kyma":{"version":"2.20.0","version":"2.21.0"}}`, `{` + targets + `,"kubernetes":{"version":"1 31"}}`,
		`{` + targets + `,"kyma":null,"kubernetes":null}`, `{` + targets + `,"extra":1}`, `{` + targets + `}` + `{}`,
		`{` + targets + `,"pad":"` + strings.Repeat("p", 70<<10) + `"}`, `{` + targets + `,"deep":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`,
	}, badBodies...)
	for _, body := range upgradeBodies {
		for _, kind := range []string{"kyma", "cluster"} {
			reqs = append(reqs, req{method: http.MethodPost, path: "/upgrade/" + kind, body: body, opts: []reqOpt{upgrade}})
		}
	}

	// Bindings of the running instance: bodies, IDs, DELETE queries.
	bindingPath := instancePath("victim-1") + "/service_bindings/"
	ids := `"service_id":"` + serviceID + `","plan_id":"` + azurePlanID + `"`
	for _, body := range append([]string{
		`{` + ids + `,"parameters":{"expiration_seconds":600},"PARAMETERS":{"expiration_seconds":7200}}`,
		`{"service_id":"` + serviceID + `","PLAN_ID":"` + azurePlanID + `"}`, `{"SERVICE_ID":"` + serviceID + `","plan_id":"` + azurePlanID + `"}`,
		`{` + ids + `,"parameters":{"expiration_seconds":600,"expiration_seconds":7200}}`, `{` + ids + `,"Parameters":{}}`,
		`{` + ids + `,"bind_resource":{"app_guid":"a","App_Guid":"b"}}`, `{"service_id":"` + serviceID + `"}`,
		`{"service_id":"bogus","plan_id":"bogus"}`, `{` + ids + `,"parameters":"x"}`, `{` + ids + `,"context":[]}`,
	}, badBodies...) {
		reqs = append(reqs, req{method: http.MethodPut, path: bindingPath + "b-2?accepts_incomplete=true", body: body})
	}
	for _, id := range append(badIDs, "..", "%2e%2e") {
		reqs = append(reqs, req{method: http.MethodPut, path: bindingPath + id, body: `{` + ids + `}`},
			req{method: http.MethodGet, path: bindingPath + id},
			req{method: http.MethodDelete, path: bindingPath + id + "?service_id=" + serviceID + "&plan_id=" + azurePlanID},
			req{method: http.MethodGet, path: bindingPath + id + "/last_operation"})
	}
	for _, q := range []string{"", "service_id=bogus&plan_id=bogus", "service_id=" + serviceID + "&plan_id=bogus",
		"service_id=bogus&plan_id=" + azurePlanID, "plan_id=" + azurePlanID, "service_id=" + serviceID,
		"service_id=" + serviceID + "&plan_id=" + trialPlanID, "service_id=" + serviceID + ";plan_id=" + azurePlanID} {
		reqs = append(reqs, req{method: http.MethodDelete, path: bindingPath + "b-1?" + q})
	}

	// keb dev's token endpoint.
	devForm := []reqOpt{form, withoutHeader("Authorization")}
	for _, body := range []string{"", "grant_type=password", "grant_type=client_credentials", "grant_type=client_credentials&client_id=keb-dev&client_secret=no",
		"grant_type=client_credentials&scope=root", "grant_type=%zz", "grant_type=a;b", "x=" + strings.Repeat("x", 20<<10)} {
		reqs = append(reqs, req{method: http.MethodPost, path: "/oauth2/token", body: body, opts: devForm, shape: shapeDev})
	}
	// The CIS stand-in.
	cisToken := withHeader("Authorization", "Bearer not-a-cis-token")
	for _, rq := range []req{
		{method: http.MethodPost, path: "/dev/cis/oauth/token", body: "grant_type=client_credentials&client_id=x&client_secret=y", opts: devForm},
		{method: http.MethodPost, path: "/dev/cis/oauth/token", body: "grant_type=password", opts: devForm},
		{method: http.MethodPost, path: "/dev/cis/oauth/token", body: "x=" + strings.Repeat("x", 20<<10), opts: devForm},
		{method: http.MethodGet, path: "/dev/cis/v2.0/events?eventType=SUBACCOUNT_DELETE&pageSize=10&pageNum=1", opts: []reqOpt{cisToken}},
		{method: http.MethodGet, path: "/dev/cis/v1.0/events?pageSize=1;pageNum=0", opts: []reqOpt{cisToken}},
		{method: http.MethodGet, path: "/dev/cis/events/v2/events/central?eventType=Subaccount_Deletion&entityType=Subaccount&since=30D&pageSize=150&sortField=creationTime&sortOrder=ASC", opts: []reqOpt{cisToken}},
		{method: http.MethodGet, path: "/dev/cis/events/v2/events/central?cursor=" + strings.Repeat("A", 8<<10), opts: []reqOpt{cisToken}},
		{method: http.MethodGet, path: "/dev/cis/events/v2/events/central?cursor=x&cursor=y", opts: []reqOpt{cisToken}},
		{method: http.MethodGet, path: "/dev/cis/entitlements/v1/services/kymaruntime/plans/azure/subaccounts/sa-1/entitlements", opts: []reqOpt{cisToken}},
		{method: http.MethodPost, path: "/dev/cis/entitlements", body: `{"subaccount_id":"sa-1","plan":"azure","amount":-1}`},
		{method: http.MethodPost, path: "/dev/cis/entitlements", body: `{"subaccount_id":"sa-1","plan":"azure","amount":1,"x":1}`},
		{method: http.MethodPost, path: "/dev/cis/entitlements", body: `{"subaccount_id":"","plan":"azure","amount":1}`},
		{method: http.MethodPost, path: "/dev/cis/entitlements", body: `{"subaccount_id":"sa-1","plan":null,"amount":1}`},
		{method: http.MethodPost, path: "/dev/cis/events", body: `{"type":"SUBACCOUNT_DELETE","subaccount_id":"sa-1","x":1}`},
		{method: http.MethodPost, path: "/dev/cis/events", body: `{"type":"OTHER","subaccount_id":"sa-1"}`},
		{method: http.MethodPost, path: "/dev/cis/events", body: `{"type":"SUBACCOUNT_DELETE"}`},
		{method: http.MethodPost, path: "/dev/cis/events", body: `{"type":"SUBACCOUNT_DELETE","subaccount_id":"` + strings.Repeat("s", 70<<10) + `"}`},
		{method: http.MethodPost, path: "/dev/cis/events/..", body: `{}`},
		{method: http.MethodGet, path: "/dev/cis/no-such-route"},
	} {
		rq.shape = shapeDev
		reqs = append(reqs, rq)
	}
	return reqs
}

// doRaw is do for requests a test means to be odd: it never fails the test
// on a body that is not JSON, leaving the judgement to the caller.
//
// It reads the answer while it writes the body, on a connection of its own:
// keb refuses a body over its limit without reading the rest and closes the
// connection, so the rest of the write may fail (EPIPE, ECONNRESET), and
// net/http's client reports that write error instead of the answer whenever
// it sees it first (a race a loaded machine loses now and then). A write
// error is accepted only when the whole answer was read and said it closes
// the connection.
func (b *bundle) doRaw(method, path, body string, opts ...reqOpt) response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatalf("%s %.100q: %v", method, path, err)
	}
	req.Header.Set("X-Broker-API-Version", "2.17")
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	for _, o := range opts {
		o(req)
	}
	r, err := roundTripReadingWhileWriting(b.srv.Listener.Addr().String(), req)
	if err != nil {
		b.t.Fatalf("%s %.100q: %v", method, path, err)
	}
	return r
}

// roundTripReadingWhileWriting sends req on a connection of its own and
// reads the answer while the request is still being written. The answer
// is returned when it was read whole; a failed write is an error unless
// the server answered with Connection: close (it refused the rest).
func roundTripReadingWhileWriting(addr string, req *http.Request) (response, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return response{}, err
	}
	defer conn.Close()
	wrote := make(chan error, 1)
	go func() {
		// The connection's own error: Request.Write hides a failed body
		// write in a type errors.Is cannot see through.
		w := &firstWriteError{w: conn}
		err := req.Write(w)
		if w.err != nil {
			err = w.err
		}
		wrote <- err
	}()
	res, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		conn.Close()
		return response{}, fmt.Errorf("reading the answer: %w (writing the request: %v)", err, <-wrote)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return response{}, fmt.Errorf("reading the answer's body (status %d): %w", res.StatusCode, err)
	}
	// With Connection: close the server closes the connection, which ends
	// a write it did not read; otherwise it reads (or discards) the body.
	if werr := <-wrote; werr != nil {
		if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
			return response{}, fmt.Errorf("writing the request: %w", werr)
		}
		if !res.Close {
			return response{}, fmt.Errorf("writing the request: %w, though the answer (status %d) keeps the connection open", werr, res.StatusCode)
		}
	}
	return response{status: res.StatusCode, header: res.Header, raw: string(raw)}, nil
}

// firstWriteError is a writer that keeps the first error of w.
type firstWriteError struct {
	w   io.Writer
	err error
}

func (f *firstWriteError) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
}
