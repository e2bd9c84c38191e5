package httpapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"code.cloudfoundry.org/lager/v3"
	"github.com/pivotal-cf/brokerapi/v10"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/kyma-keb/keb/internal/logging"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/catalog"
)

func catalogHandler(t *testing.T) http.Handler {
	t.Helper()
	_, h := catalogOf(t, "azure", "gcp", "trial")
	return h
}

// catalogOf is a broker with plans enabled and its catalog's handler.
func catalogOf(t testing.TB, plans ...string) (*broker.Broker, http.Handler) {
	t.Helper()
	cat, err := catalog.Load("")
	if err != nil {
		t.Fatal(err)
	}
	brk, err := broker.New(cat, nil, broker.Options{EnabledPlans: plans}, nil)
	if err != nil {
		t.Fatal(err)
	}
	services, err := brk.Services(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h, err := serveCatalog(services)
	if err != nil {
		t.Fatal(err)
	}
	return brk, h
}

func TestCatalogCarriesAnETagAndAnswers304(t *testing.T) {
	t.Parallel()
	h := catalogHandler(t)
	get := func(ifNoneMatch ...string) (*http.Response, []byte) {
		req := httptest.NewRequest(http.MethodGet, "/oauth/v2/catalog", nil)
		for _, v := range ifNoneMatch {
			req.Header.Add("If-None-Match", v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, body
	}

	res, want := get()
	etag := res.Header.Get("ETag")
	if res.StatusCode != http.StatusOK || len(want) == 0 || len(etag) < 3 || etag[0] != '"' {
		t.Fatalf("status %d, %d bytes, ETag %q; want the catalog with a quoted entity tag", res.StatusCode, len(want), etag)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "private, no-cache" {
		t.Errorf("Cache-Control %q; want private, no-cache (stored by the caller only, revalidated on every use)", cc)
	}
	// Each: If-None-Match lines that name the catalog (RFC 9110 §13.1.2:
	// weak comparison, "*", lists, a list split over lines).
	for _, inm := range [][]string{{etag}, {"W/" + etag}, {`"other", ` + etag}, {"*"}, {` , ` + etag + ` ,`},
		{`"other"`, etag}, {`"a,b", ` + etag}, {`W/"x",W/` + etag}} {
		res, body := get(inm...)
		if res.StatusCode != http.StatusNotModified || len(body) != 0 || res.Header.Get("ETag") != etag ||
			res.Header.Get("Cache-Control") != "private, no-cache" || res.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("If-None-Match %q: status %d, %d body bytes, headers %v; want 304 with the ETag, Cache-Control and Vary, no body",
				inm, res.StatusCode, len(body), res.Header)
		}
	}
	// Lines that do not name it, or are no list of entity tags: the catalog.
	for _, inm := range [][]string{{`"stale"`}, {etag[1 : len(etag)-1]}, {`"` + etag}, {"*x"}, {`"a,` + etag[1:]},
		{"W/ " + etag}, {"w/" + etag}, {`"other" x ` + etag}, {""}, {"\x00" + etag}} {
		if res, body := get(inm...); res.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
			t.Errorf("If-None-Match %q: status %d; want 200 with the catalog", inm, res.StatusCode)
		}
	}
}

// The prepared bytes say what brokerapi's own encoding of the same services
// says (without its null schemas): preparing them once changed nothing a
// platform reads.
func TestCatalogBytesAreBrokerapisCatalog(t *testing.T) {
	t.Parallel()
	brk, h := catalogOf(t, "azure", "gcp", "trial", "aws", "free")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/oauth/v2/catalog", nil))
	var served any
	if err := json.Unmarshal(rec.Body.Bytes(), &served); err != nil {
		t.Fatal(err)
	}
	ref := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v2/catalog", nil)
	req.Header.Set("X-Broker-API-Version", "2.17")
	brokerapi.NewWithOptions(brk, lager.NewLogger("test")).ServeHTTP(ref, req)
	var encoded any
	if err := json.Unmarshal(ref.Body.Bytes(), &encoded); err != nil {
		t.Fatalf("brokerapi's catalog (%d): %v", ref.Code, err)
	}
	plans := 0
	for _, s := range encoded.(map[string]any)["services"].([]any) {
		for _, p := range s.(map[string]any)["plans"].([]any) {
			plans++
			plan := p.(map[string]any)
			if sch, keep := withoutEmpty(plan["schemas"], 3); keep {
				plan["schemas"] = sch
			} else {
				delete(plan, "schemas")
			}
		}
	}
	if plans < 5 || !reflect.DeepEqual(served, encoded) {
		t.Fatalf("the served catalog (%d plans in brokerapi's) differs from brokerapi's:\nserved:    %.600s\nbrokerapi: %.600s",
			plans, rec.Body.String(), ref.Body.String())
	}
}

// A client that accepts gzip gets the catalog compressed, with an entity tag
// of its own; one that does not (or refuses it with q=0) gets it as is.
func TestCatalogIsServedGzippedToClientsThatAcceptIt(t *testing.T) {
	t.Parallel()
	h := catalogHandler(t)
	get := func(acceptEncoding, ifNoneMatch string) (*http.Response, []byte) {
		req := httptest.NewRequest(http.MethodGet, "/oauth/v2/catalog", nil)
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result(), rec.Body.Bytes()
	}
	plain, want := get("", "")
	if plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("without Accept-Encoding: Content-Encoding %q, Vary %q; want none and Accept-Encoding",
			plain.Header.Get("Content-Encoding"), plain.Header.Get("Vary"))
	}
	for _, ae := range []string{"gzip", "gzip, deflate, br", "br;q=1.0, GZIP;q=0.5", "*", "x-gzip"} {
		res, body := get(ae, "")
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q: status %d, Content-Encoding %q; want 200 gzip", ae, res.StatusCode, res.Header.Get("Content-Encoding"))
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("Accept-Encoding %q: %v", ae, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Accept-Encoding %q: the body does not unzip to the catalog (%v)", ae, err)
		}
		if len(body) >= len(want)/4 {
			t.Errorf("Accept-Encoding %q: %d bytes for a %d-byte catalog", ae, len(body), len(want))
		}
		etag := res.Header.Get("ETag")
		if etag == plain.Header.Get("ETag") {
			t.Errorf("Accept-Encoding %q: the gzip body has the plain body's ETag %s", ae, etag)
		}
		if res, _ := get(ae, etag); res.StatusCode != http.StatusNotModified {
			t.Errorf("Accept-Encoding %q, If-None-Match its ETag: status %d, want 304", ae, res.StatusCode)
		}
	}
	for _, ae := range []string{"identity", "gzip;q=0", "br, gzip; q=0.000", "deflate"} {
		res, body := get(ae, "")
		if res.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, want) {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q; want the plain catalog", ae, res.Header.Get("Content-Encoding"))
		}
	}
}

// Served catalogs and answered polls are logged at debug, like probes: a
// platform sends them over and over. Other requests, and failed catalog
// reads, are logged at info or above.
func TestAccessLogLevels(t *testing.T) {
	t.Parallel()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	r := mux.NewRouter()
	r.Use(accessLog)
	status := func(code int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) })
	}
	r.Handle("/oauth/v2/catalog", status(http.StatusOK)).Methods(http.MethodGet).Headers("X-Case", "ok")
	r.Handle("/oauth/v2/catalog", status(http.StatusNotModified)).Methods(http.MethodGet).Headers("X-Case", "304")
	r.Handle("/oauth/v2/catalog", status(http.StatusUnauthorized)).Methods(http.MethodGet).Headers("X-Case", "401")
	r.Handle("/oauth/v2/service_instances/{instance_id}/last_operation", status(http.StatusOK)).Methods(http.MethodGet)
	r.Handle("/oauth/v2/service_instances/{instance_id}", status(http.StatusAccepted)).Methods(http.MethodPut)
	tests := []struct {
		method, path, xcase string
		want                logrus.Level
	}{
		{http.MethodGet, "/oauth/v2/catalog", "ok", logrus.DebugLevel},
		{http.MethodGet, "/oauth/v2/catalog", "304", logrus.DebugLevel},
		{http.MethodGet, "/oauth/v2/catalog", "401", logrus.InfoLevel},
		{http.MethodGet, "/oauth/v2/service_instances/i-1/last_operation", "", logrus.DebugLevel},
		{http.MethodPut, "/oauth/v2/service_instances/i-1", "", logrus.InfoLevel},
	}
	for _, tc := range tests {
		hook.Reset()
		req := httptest.NewRequest(tc.method, tc.path, nil)
		req.Header.Set("X-Case", tc.xcase)
		req = req.WithContext(logging.WithLogger(req.Context(), log))
		r.ServeHTTP(httptest.NewRecorder(), req)
		if e := hook.LastEntry(); e == nil || e.Level != tc.want {
			t.Errorf("%s %s (%s): logged %v, want one line at %s", tc.method, tc.path, tc.xcase, e, tc.want)
		}
	}
}

// FuzzIfNoneMatch: any If-None-Match line. A line matches the catalog's tag
// only when it holds that tag (bare or W/) or a "*"; and a tag put in front of
// or behind any line that is a list still matches.
func FuzzIfNoneMatch(f *testing.F) {
	const etag = `"3q2-7w-x9kQZ0FjH1bS2hw-gzip"`
	for _, s := range []string{etag, "*", `W/` + etag, `"a,b", ` + etag, `"x" ` + etag, `"`, ``, `,,,`, `W/`, `*x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if etagMatches([]string{line}, etag) && !strings.Contains(line, etag) && !strings.Contains(line, "*") {
			t.Fatalf("%q matched %s", line, etag)
		}
		if !etagMatches([]string{line, etag}, etag) {
			t.Fatalf("a second line holding the tag did not match after %q", line)
		}
		if !etagMatches([]string{etag + ", " + line}, etag) {
			t.Fatalf("the tag first in a list did not match before %q", line)
		}
	})
}
