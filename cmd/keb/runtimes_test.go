package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/runtimelisting"
)

var runtimesNow = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

func sampleRuntime(id, rt, plan, state string, created time.Time) runtimelisting.RuntimeDTO {
	return runtimelisting.RuntimeDTO{
		InstanceID: id, RuntimeID: rt, GlobalAccountID: "ga-1", SubAccountID: "sa-1",
		ProviderRegion: "westeurope", ServicePlanName: plan, ServiceClassName: "kymaruntime",
		Parameters: json.RawMessage(`{}`),
		Status:     runtimelisting.RuntimeStatus{CreatedAt: created, ModifiedAt: created, State: state},
	}
}

// fakeBroker serves canned pages of /info/runtimes: pages[""] answers a
// request without next, pages[c] one with next=c. It records every request.
type fakeBroker struct {
	t      *testing.T
	token  string // the Authorization header it demands, unless empty
	pages  map[string]runtimelisting.Response
	status int    // if set, every answer has this status
	body   string // and this body
	mu     sync.Mutex
	reqs   []*http.Request
}

func (f *fakeBroker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.mu.Unlock()
	if r.Method != http.MethodGet || r.URL.Path != "/info/runtimes" {
		f.t.Errorf("request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		f.t.Errorf("Authorization %q, want Bearer %s", r.Header.Get("Authorization"), f.token)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 {
		w.WriteHeader(f.status)
		io.WriteString(w, f.body)
		return
	}
	page, ok := f.pages[r.URL.Query().Get("next")]
	if !ok {
		f.t.Errorf("unexpected next %q", r.URL.Query().Get("next"))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	_ = json.NewEncoder(w).Encode(page)
}

func (f *fakeBroker) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.reqs...)
}

// runRuntimesAt runs `keb runtimes --url srv args...` with a fixed clock,
// returning what it printed.
func runRuntimesAt(t *testing.T, srv *httptest.Server, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	fs := flag.NewFlagSet("keb runtimes", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var out, errOut bytes.Buffer
	runFn := bindRuntimes(fs, &out, &errOut, func() time.Time { return runtimesNow })
	positional, err := parseInterspersed(fs, append([]string{"--url", srv.URL}, args...))
	if err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	err = runFn(t.Context(), positional)
	return out.String(), errOut.String(), err
}

// rtID1 is a runtime ID as keb writes them (a UUID; -r refuses others).
const rtID1 = "5f6c3e3a-1b2c-4d5e-8f90-0a1b2c3d4e5f"

func TestRuntimesTableAndQuery(t *testing.T) {
	f := &fakeBroker{t: t, token: "tok-123", pages: map[string]runtimelisting.Response{
		"": {Data: []runtimelisting.RuntimeDTO{
			sampleRuntime("inst-1", rtID1, "azure", "succeeded", runtimesNow.Add(-5*time.Minute)),
			sampleRuntime("inst-22", "", "trial", "provisioning", runtimesNow.Add(-3*time.Hour)),
			sampleRuntime("inst-333", "rt-3", "aws", "failed", runtimesNow.Add(-50*time.Hour)),
		}, Count: 3, TotalCount: 3},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()

	out, errOut, err := runRuntimesAt(t, srv, "--token", "tok-123",
		"--account", "ga-1,ga-2", "--account", "ga-3", "--plan", "azure", "--state", "succeeded,failed",
		"--instance-id", "inst-1", "--runtime-id", rtID1, "--region", "westeurope", "--subaccount", "sa-1",
		"--shoot", "c-123", "--page-size", "50", "--expired")
	if err != nil {
		t.Fatalf("error: %v", err)
	}
	if errOut != "" {
		t.Errorf("stderr: %s", errOut)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	q := reqs[0].URL.Query()
	want := map[string][]string{
		"account": {"ga-1", "ga-2", "ga-3"}, "plan": {"azure"}, "state": {"succeeded", "failed"},
		"instance_id": {"inst-1"}, "runtime_id": {rtID1}, "region": {"westeurope"}, "subaccount": {"sa-1"},
		"shoot": {"c-123"}, "page_size": {"50"}, "expired": {"true"},
	}
	if !reflect.DeepEqual(map[string][]string(q), want) {
		t.Errorf("query %v, want %v", q, want)
	}

	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines, want 4:\n%s", len(lines), out)
	}
	wantRows := [][]string{
		{"INSTANCE", "RUNTIME", "ACCOUNT", "PLAN", "REGION", "STATE", "AGE"},
		{"inst-1", rtID1, "ga-1", "azure", "westeurope", "succeeded", "5m"},
		{"inst-22", "-", "ga-1", "trial", "westeurope", "provisioning", "3h"},
		{"inst-333", "rt-3", "ga-1", "aws", "westeurope", "failed", "2d"},
	}
	for i, l := range lines {
		if got := strings.Fields(l); !reflect.DeepEqual(got, wantRows[i]) {
			t.Errorf("line %d = %q, want %q", i, got, wantRows[i])
		}
	}
	// Columns are aligned: every row's STATE starts where the header's does.
	col := strings.Index(lines[0], "STATE")
	for _, l := range lines[1:] {
		if l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("STATE column not aligned at %d in %q", col, l)
		}
	}
}

func TestRuntimesJSON(t *testing.T) {
	page := runtimelisting.Response{Data: []runtimelisting.RuntimeDTO{
		sampleRuntime("inst-1", rtID1, "azure", "succeeded", runtimesNow.Add(-time.Hour)),
	}, Count: 1, TotalCount: 7, Next: "cursor-2"}
	f := &fakeBroker{t: t, token: "tok", pages: map[string]runtimelisting.Response{"": page}}
	srv := httptest.NewServer(f)
	defer srv.Close()

	for _, format := range []string{"json", "yaml"} {
		out, errOut, err := runRuntimesAt(t, srv, "--token", "tok", "--output", format)
		if err != nil {
			t.Fatalf("error: %v", err)
		}
		// A list is the page the API answers, in every listing command;
		// the hint that more are there goes to stderr.
		var got runtimelisting.Response
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("-o %s output is not a page: %v\n%s", format, err, out)
		}
		if format == "json" && !json.Valid([]byte(out)) {
			t.Errorf("-o json is not JSON:\n%s", out)
		}
		if got.Count != 1 || got.TotalCount != 7 || got.Next != "cursor-2" || len(got.Data) != 1 ||
			got.Data[0].InstanceID != "inst-1" || !got.Data[0].Status.CreatedAt.Equal(page.Data[0].Status.CreatedAt) {
			t.Errorf("-o %s output %+v, want the server's page %+v", format, got, page)
		}
		if !strings.Contains(errOut, "1 of 7 runtimes shown") {
			t.Errorf("-o %s: stderr %q does not say more are there", format, errOut)
		}
	}
	if q := f.requests()[0].URL.Query(); len(q) != 0 {
		t.Errorf("query %v, want none without filters", q)
	}
}

func TestRuntimesAllFollowsNext(t *testing.T) {
	f := &fakeBroker{t: t, token: "tok", pages: map[string]runtimelisting.Response{
		"": {Data: []runtimelisting.RuntimeDTO{
			sampleRuntime("inst-1", rtID1, "azure", "succeeded", runtimesNow.Add(-time.Minute)),
			sampleRuntime("inst-2", "rt-2", "azure", "succeeded", runtimesNow.Add(-2*time.Minute)),
		}, Count: 2, TotalCount: 3, Next: "c2"},
		"c2": {Data: []runtimelisting.RuntimeDTO{
			sampleRuntime("inst-3", "rt-3", "azure", "failed", runtimesNow.Add(-3*time.Minute)),
		}, Count: 1, TotalCount: 3},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()

	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			before := len(f.requests())
			out, errOut, err := runRuntimesAt(t, srv, "--token", "tok", "--all", "--page-size", "2", "--plan", "azure", "-o", format)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if errOut != "" {
				t.Errorf("stderr: %s", errOut)
			}
			reqs := f.requests()[before:]
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for i, wantNext := range []string{"", "c2"} {
				q := reqs[i].URL.Query()
				if q.Get("next") != wantNext || q.Get("page_size") != "2" || q.Get("plan") != "azure" {
					t.Errorf("request %d query %v: want next=%q with page_size and plan kept", i, q, wantNext)
				}
			}
			var ids []string
			if format == "json" {
				var got runtimelisting.Response
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if got.Count != 3 || got.TotalCount != 3 || got.Next != "" {
					t.Errorf("count %d, totalCount %d, next %q; want 3, 3, none", got.Count, got.TotalCount, got.Next)
				}
				for _, r := range got.Data {
					ids = append(ids, r.InstanceID)
				}
			} else {
				for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n")[1:] {
					ids = append(ids, strings.Fields(l)[0])
				}
			}
			if want := []string{"inst-1", "inst-2", "inst-3"}; !reflect.DeepEqual(ids, want) {
				t.Errorf("instances %v, want %v", ids, want)
			}
		})
	}
}

func TestRuntimesWithoutAllHintsAtMore(t *testing.T) {
	f := &fakeBroker{t: t, pages: map[string]runtimelisting.Response{
		"": {Data: []runtimelisting.RuntimeDTO{sampleRuntime("inst-1", rtID1, "azure", "succeeded", runtimesNow)}, Count: 1, TotalCount: 2, Next: "c2"},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	out, errOut, err := runRuntimesAt(t, srv, "--token", "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.requests()) != 1 || !strings.Contains(out, "inst-1") || !strings.Contains(errOut, "1 of 2") {
		t.Errorf("requests %d, stdout:\n%s\nstderr: %s", len(f.requests()), out, errOut)
	}
}

func TestRuntimesErrorAnswer(t *testing.T) {
	f := &fakeBroker{t: t, token: "tok", status: http.StatusBadRequest,
		body: `{"error":"BadRequest","description":"unknown state \"bogus\" (want one of provisioning, succeeded)"}`}
	srv := httptest.NewServer(f)
	defer srv.Close()

	out, _, err := runRuntimesAt(t, srv, "--token", "tok", "--state", "bogus")
	if err == nil {
		t.Fatal("no error on a 400 answer")
	}
	if !strings.Contains(err.Error(), `unknown state "bogus"`) || !strings.Contains(err.Error(), "400") {
		t.Errorf("error %q does not carry the status and the server's description", err)
	}
	if out != "" {
		t.Errorf("stdout on error: %s", out)
	}

	// Through run(): the description on stderr and exit code 1.
	code, _, errOut := runKeb("runtimes", "--url", srv.URL, "--token", "tok", "--state", "bogus")
	if code != 1 || !strings.Contains(errOut, "keb runtimes:") || !strings.Contains(errOut, `unknown state "bogus"`) {
		t.Errorf("exit code %d, stderr %q; want 1 and the description", code, errOut)
	}
}

func TestRuntimesNonJSONErrorAnswer(t *testing.T) {
	f := &fakeBroker{t: t, status: http.StatusBadGateway, body: "upstream down"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	_, _, err := runRuntimesAt(t, srv, "--token", "tok")
	if err == nil || !strings.Contains(err.Error(), "upstream down") || !strings.Contains(err.Error(), "502") {
		t.Errorf("error %v, want the status and body", err)
	}
}

func TestRuntimesMintsDevToken(t *testing.T) {
	dir := t.TempDir()
	if _, err := auth.LoadOrCreateDevKey(dir); err != nil {
		t.Fatal(err)
	}
	f := &fakeBroker{t: t, pages: map[string]runtimelisting.Response{"": {Data: []runtimelisting.RuntimeDTO{}}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	out, errOut, err := runRuntimesAt(t, srv, "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if out != "" || strings.TrimSpace(errOut) != "No runtimes found" {
		t.Errorf("empty listing printed %q, and %q to stderr", out, errOut)
	}
	h := f.requests()[0].Header.Get("Authorization")
	parts := strings.Split(strings.TrimPrefix(h, "Bearer "), ".")
	if !strings.HasPrefix(h, "Bearer ") || len(parts) != 3 {
		t.Fatalf("Authorization %q is no bearer JWT", h)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims auth.Claims
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if !claims.HasScope(auth.ScopeCLDRead) || claims.HasScope("broker:write") {
		t.Errorf("token scopes %v, want cld:read only", claims.Scopes)
	}
}

func TestRuntimesBadInvocations(t *testing.T) {
	srv := httptest.NewServer(&fakeBroker{t: t})
	defer srv.Close()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no token and no dev key", []string{"--dir", t.TempDir()}, "no dev signing key"},
		{"bad output", []string{"--token", "x", "-o", "xml"}, `unknown output format "xml"`},
		{"bad custom columns", []string{"--token", "x", "-o", "custom-columns=nocolon"}, "HEADER:.field"},
		{"bad page size", []string{"--token", "x", "--page-size", "101"}, "bad --page-size 101"},
		{"positional argument", []string{"--token", "x", "inst-1"}, "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runRuntimesAt(t, srv, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if n := len(srv.Config.Handler.(*fakeBroker).requests()); n != 0 {
		t.Errorf("%d requests sent by bad invocations", n)
	}
}

func TestRuntimesFilterFromEnvironment(t *testing.T) {
	t.Setenv("KEB_RUNTIMES_PLAN", "trial,free")
	t.Setenv("KEB_OUTPUT", "json")
	t.Setenv("KEB_TOKEN", "env-tok")
	f := &fakeBroker{t: t, token: "env-tok", pages: map[string]runtimelisting.Response{"": {Data: []runtimelisting.RuntimeDTO{}}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	out, _, err := runRuntimesAt(t, srv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), `{`) || !strings.Contains(out, `"data": []`) {
		t.Errorf("KEB_OUTPUT=json ignored: %s", out)
	}
	if got := f.requests()[0].URL.Query()["plan"]; !reflect.DeepEqual(got, []string{"trial", "free"}) {
		t.Errorf("plan %v from KEB_RUNTIMES_PLAN, want [trial free]", got)
	}
	// A flag replaces the variable's values rather than adding to them.
	if _, _, err := runRuntimesAt(t, srv, "--plan", "azure"); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[1].URL.Query()["plan"]; !reflect.DeepEqual(got, []string{"azure"}) {
		t.Errorf("plan %v with --plan azure over the variable, want [azure]", got)
	}
}

func TestAge(t *testing.T) {
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{-time.Minute, "0s"}, {30 * time.Second, "30s"}, {5 * time.Minute, "5m"}, {59 * time.Minute, "59m"},
		{3 * time.Hour, "3h"}, {47 * time.Hour, "47h"}, {49 * time.Hour, "2d"}, {400 * 24 * time.Hour, "400d"},
	}
	for _, tc := range tests {
		if got := age(runtimesNow, runtimesNow.Add(-tc.ago)); got != tc.want {
			t.Errorf("age(%v) = %q, want %q", tc.ago, got, tc.want)
		}
	}
	if got := age(runtimesNow, time.Time{}); got != "-" {
		t.Errorf("age of zero time = %q", got)
	}
}

func TestRuntimesOutputsAndShortFlags(t *testing.T) {
	rt := sampleRuntime("inst-1", rtID1, "azure", "suspended", runtimesNow.Add(-5*time.Minute))
	rt.SubAccountID, rt.ShootName, rt.KymaState = "sa-9", "c-abc", "Error"
	rt.Status.Operations = []runtimelisting.OperationDTO{
		{OperationID: "op-2", Type: "deprovision", State: "succeeded", Description: "suspended", CreatedAt: runtimesNow.Add(-time.Minute)},
		{OperationID: "op-1", Type: "provision", State: "succeeded", Description: "ready", CreatedAt: runtimesNow.Add(-4 * time.Minute)},
	}
	f := &fakeBroker{t: t, pages: map[string]runtimelisting.Response{"": {Data: []runtimelisting.RuntimeDTO{rt}, Count: 1, TotalCount: 1}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	fields := func(out string) [][]string {
		var rows [][]string
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			rows = append(rows, strings.Fields(l))
		}
		return rows
	}

	out, _, err := runRuntimesAt(t, srv, "--token", "t", "-o", "wide", "-g", "ga-1", "-s", "sa-9", "-c", "c-abc", "-p", "azure", "-i", "inst-1", "-r", rtID1,
		"--kyma-state", "Error")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"INSTANCE", "RUNTIME", "ACCOUNT", "SUBACCOUNT", "SHOOT", "PLAN", "REGION", "STATE", "KYMA", "AGE"},
		{"inst-1", rtID1, "ga-1", "sa-9", "c-abc", "azure", "westeurope", "suspended", "Error", "5m"},
	}
	if got := fields(out); !reflect.DeepEqual(got, want) {
		t.Errorf("-o wide:\n got %q\nwant %q", got, want)
	}
	q := f.requests()[0].URL.Query()
	wantQ := map[string][]string{"account": {"ga-1"}, "subaccount": {"sa-9"}, "shoot": {"c-abc"}, "plan": {"azure"},
		"instance_id": {"inst-1"}, "runtime_id": {rtID1}, "kyma_state": {"Error"}}
	if !reflect.DeepEqual(map[string][]string(q), wantQ) {
		t.Errorf("short flags sent %v, want %v", q, wantQ)
	}

	out, _, err = runRuntimesAt(t, srv, "--token", "t", "-o", "custom-columns=ID:.instanceID,state:.status.state,SHOOT:.shootName")
	if err != nil {
		t.Fatal(err)
	}
	if got := fields(out); !reflect.DeepEqual(got, [][]string{{"ID", "STATE", "SHOOT"}, {"inst-1", "suspended", "c-abc"}}) {
		t.Errorf("-o custom-columns: %q", got)
	}
	out, _, err = runRuntimesAt(t, srv, "--token", "t", "--output", "custom-columns=ID:.instanceID", "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	if out != "inst-1\n" {
		t.Errorf("--no-headers -o custom-columns printed %q, want the one value", out)
	}

	out, _, err = runRuntimesAt(t, srv, "--token", "t", "--ops")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[len(f.requests())-1].URL.Query().Get("op_detail"); got != "all" {
		t.Errorf("--ops sent op_detail=%q", got)
	}
	rows := fields(out)
	if len(rows) != 4 || rows[2][0] != "deprovision" || rows[2][1] != "op-2" || rows[3][0] != "provision" {
		t.Errorf("--ops table:\n%s", out)
	}
	// The operations' columns line up with each other (ID under ID, state
	// under state), whatever the runtimes' columns are.
	lines := strings.Split(out, "\n")
	for i := 1; i < len(rows[2]) && len(rows) == 4; i++ {
		if a, b := strings.Index(lines[2], " "+rows[2][i]), strings.Index(lines[3], " "+rows[3][i]); a != b {
			t.Errorf("--ops: column %d of the operations does not line up:\n%s", i, out)
		}
	}
}

// Without --url, keb runtimes talks to the keb dev whose URL is in the dev
// directory; `keb rt` is the same command.
func TestRuntimesFindsDevBrokerAndAlias(t *testing.T) {
	f := &fakeBroker{t: t, pages: map[string]runtimelisting.Response{"": {Data: []runtimelisting.RuntimeDTO{}}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	dir := t.TempDir()
	if _, err := auth.LoadOrCreateDevKey(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, devstack.EndpointsFile), []byte(`{"broker_url":"`+srv.URL+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KEB_URL", "")
	os.Unsetenv("KEB_URL")
	out := captureStdout(t, func() {
		if code, _, errOut := runKeb("rt", "--dir", dir, "-o", "json"); code != 0 {
			t.Errorf("keb rt: exit %d: %s", code, errOut)
		}
	})
	if !strings.Contains(out, `"data": []`) || len(f.requests()) != 1 {
		t.Errorf("keb rt printed %q after %d requests", out, len(f.requests()))
	}
}

// TestRuntimesAllStreamsTheDocumentItWouldBuffer: --all -o json prints each
// page as it arrives (memory for one page, not for every runtime), and what
// it prints is byte for byte the document of the whole list, also when the
// list is empty.
func TestRuntimesAllStreamsTheDocumentItWouldBuffer(t *testing.T) {
	rts := []runtimelisting.RuntimeDTO{
		sampleRuntime("inst-1", rtID1, "azure", "succeeded", runtimesNow.Add(-time.Minute)),
		sampleRuntime("inst-2", "rt-<2>&", "azure", "succeeded", runtimesNow.Add(-2*time.Minute)),
		sampleRuntime("inst-3", "rt-3", "azure", "failed", runtimesNow.Add(-3*time.Minute)),
	}
	for name, pages := range map[string]map[string]runtimelisting.Response{
		"three runtimes on two pages": {
			"":   {Data: rts[:2], Count: 2, TotalCount: 3, Next: "c2"},
			"c2": {Data: rts[2:], Count: 1, TotalCount: 3},
		},
		"none": {"": {Data: []runtimelisting.RuntimeDTO{}, TotalCount: 0}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeBroker{t: t, pages: pages})
			defer srv.Close()
			out, _, err := runRuntimesAt(t, srv, "--token", "tok", "--all", "--page-size", "2", "-o", "json")
			if err != nil {
				t.Fatal(err)
			}
			all := []runtimelisting.RuntimeDTO{}
			for _, p := range []string{"", "c2"} {
				all = append(all, pages[p].Data...)
			}
			var want bytes.Buffer
			if err := printObject(&want, "json", pageOf(all)); err != nil {
				t.Fatal(err)
			}
			if out != want.String() {
				t.Errorf("streamed:\n%s\nwant the whole list's document:\n%s", out, want.String())
			}
		})
	}
}

// kcp users' short flags: -t is --state; -r with a region (kcp's -r) is
// refused with what to use, and -i finding nothing says what keb's -i is.
func TestRuntimesKcpShortFlags(t *testing.T) {
	f := &fakeBroker{t: t, pages: map[string]runtimelisting.Response{"": {Data: []runtimelisting.RuntimeDTO{}}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	if _, _, err := runRuntimesAt(t, srv, "--token", "t", "-t", "failed"); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].URL.Query()["state"]; len(got) != 1 || got[0] != "failed" {
		t.Errorf("-t failed sent state=%v", got)
	}
	n := len(f.requests())
	if _, _, err := runRuntimesAt(t, srv, "--token", "t", "-r", "westeurope"); err == nil ||
		!strings.Contains(err.Error(), "--region") || len(f.requests()) != n {
		t.Errorf("-r westeurope: %v (%d requests sent); want a refusal pointing at --region, nothing sent", err, len(f.requests())-n)
	}
	_, errOut, err := runRuntimesAt(t, srv, "--token", "t", "-i", "5f6c3e3a-0000-4d5e-8f90-0a1b2c3d4e5f")
	if err != nil || !strings.Contains(errOut, "No runtimes found") || !strings.Contains(errOut, "keb's -r") {
		t.Errorf("-i finding nothing: %v, stderr %q; want a hint that keb's -i is the instance ID", err, errOut)
	}
}
