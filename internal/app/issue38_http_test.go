package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/testing/logtest"
)

// Issue 38, defect 8: the console's login redirected to next as given once
// it began with /console/, so /console/../../evil (and its escaped forms,
// which a browser resolves alike) led outside the console.
func TestConsoleLoginStaysInside(t *testing.T) {
	t.Parallel()
	b := setup(t)
	token := b.mint(auth.ScopeCLDRead)
	for next, want := range map[string]string{
		"/console/../../evil":          "/console",
		"/console/%2e%2e/%2e%2e/evil":  "/console",
		"/console/%2E%2E/evil":         "/console",
		"/console/.%2e/evil":           "/console",
		"/console/%252e%252e/evil":     "/console",
		"/console/./../evil":           "/console",
		"/console/x/..":                "/console",
		"/console//evil.example":       "/console",
		"/console/%5c%5cevil.example":  "/console",
		"/console/%2f%2fevil.example":  "/console",
		"/console/instances/x#/../../": "/console",
		"/console?plan=azure":          "/console?plan=azure",
		"/console/instances/abc":       "/console/instances/abc",
		"/console/instances/abc?x=..":  "/console/instances/abc?x=..",
	} {
		res := b.postForm("/console/login", url.Values{"token": {token}, "next": {next}}.Encode())
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != want {
			t.Errorf("login with next=%q: %d to %q, want 303 to %q", next, res.StatusCode, res.Header.Get("Location"), want)
		}
	}
}

// Issue 38, defect 9: X-Broker-API-Request-Identity was logged whole, even
// on an unauthenticated request: a 60 KB header made a 60 KB log line.
func TestLoggedHeadersBounded(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	b := setupWith(t, nil, logs)
	huge := strings.Repeat("i", 60<<10)
	r := b.do(http.MethodGet, instancePath("hdr-1"), "", withoutHeader("Authorization"),
		withHeader("X-Broker-API-Request-Identity", huge))
	b.expect(r, http.StatusUnauthorized)
	b.do(http.MethodGet, instancePath("hdr-1"), "", withHeader("X-Broker-API-Request-Identity", huge))
	b.srv.Close()
	out := logs.String()
	if !strings.Contains(out, "truncated") {
		t.Errorf("no truncated request identity in the log:\n%.2000s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 2<<10 {
			t.Fatalf("a %d-byte log line: %.300s…", len(line), line)
		}
	}
}

// Issue 38, defect 10: 405 answers carried no Allow header, and HEAD got
// 405 wherever GET is served. Every route of the table: HEAD answers as
// GET does, without a body, and a method the route does not serve gets 405
// with an Allow header listing the route's methods (HEAD with GET).
func TestHeadAndAllowOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	routed := b.app.Handler.(interface{ Router() *mux.Router })
	vars := regexp.MustCompile(`\{[^}]+\}`)
	type route struct {
		path    string
		methods []string
	}
	var routes []route
	err := routed.Router().Walk(func(r *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tmpl, err := r.GetPathTemplate()
		methods, merr := r.GetMethods()
		if err != nil || merr != nil || strings.HasSuffix(tmpl, "/") {
			return nil // prefix routes serve any method
		}
		routes = append(routes, route{path: vars.ReplaceAllString(tmpl, "x"), methods: methods})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 20 {
		t.Fatalf("only %d routes in the table", len(routes))
	}
	for _, rt := range routes {
		if slices.Contains(rt.methods, http.MethodGet) {
			get := b.doRaw(http.MethodGet, rt.path, "")
			head := b.doRaw(http.MethodHead, rt.path, "")
			if head.status != get.status || head.raw != "" {
				t.Errorf("HEAD %s: %d with %d body bytes; GET: %d", rt.path, head.status, len(head.raw), get.status)
			}
		}
		other := http.MethodPatch
		if slices.Contains(rt.methods, other) {
			other = http.MethodPost
		}
		r := b.doRaw(other, rt.path, "")
		if r.status != http.StatusMethodNotAllowed {
			continue // another route serves the path with that method
		}
		allow := strings.Split(r.header.Get("Allow"), ", ")
		for _, m := range rt.methods {
			if !slices.Contains(allow, m) {
				t.Errorf("%s %s: 405 with Allow %q, which lacks %s", other, rt.path, r.header.Get("Allow"), m)
			}
		}
		if slices.Contains(rt.methods, http.MethodGet) && !slices.Contains(allow, http.MethodHead) {
			t.Errorf("%s %s: 405 with Allow %q, which lacks HEAD", other, rt.path, r.header.Get("Allow"))
		}
	}
}
