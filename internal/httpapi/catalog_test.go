package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"code.cloudfoundry.org/lager/v3"
	"github.com/gorilla/mux"
	"github.com/pivotal-cf/brokerapi/v10"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/catalog"
)

func TestCatalogServesBrokerapisBytesWithAnETag(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Load("")
	if err != nil {
		t.Fatal(err)
	}
	brk, err := broker.New(cat, nil, broker.Options{EnabledPlans: []string{"azure", "gcp", "trial"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func(h http.Handler, path string, header http.Header) *http.Response {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("X-Broker-API-Version", "2.17")
		for k, v := range header {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	body := func(r *http.Response) []byte {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	// What brokerapi itself answers for the same broker.
	want := body(get(brokerapi.NewWithOptions(brk, lager.NewLogger("test")), "/v2/catalog", nil))

	r := mux.NewRouter()
	r.Handle("/oauth/{region}/v2/catalog", newCatalogHandler(brk))
	res := get(r, "/oauth/cf-eu10/v2/catalog", nil)
	got := body(res)
	if res.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Fatalf("status %d, body differs from brokerapi's:\n got %s\nwant %s", res.StatusCode, got, want)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	etag := res.Header.Get("ETag")
	if len(etag) < 3 || etag[0] != '"' {
		t.Fatalf("ETag %q, want a quoted entity tag", etag)
	}

	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		res := get(r, "/oauth/cf-eu10/v2/catalog", http.Header{"If-None-Match": {inm}})
		if b := body(res); res.StatusCode != http.StatusNotModified || len(b) != 0 || res.Header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: status %d, %d body bytes, ETag %q; want 304 with the ETag and no body",
				inm, res.StatusCode, len(b), res.Header.Get("ETag"))
		}
	}
	res = get(r, "/oauth/cf-eu10/v2/catalog", http.Header{"If-None-Match": {`"stale"`}})
	if b := body(res); res.StatusCode != http.StatusOK || !bytes.Equal(b, want) {
		t.Errorf("stale If-None-Match: status %d, want 200 with the catalog", res.StatusCode)
	}
}

func TestCatalogPreparesABoundedNumberOfRegions(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Load("")
	if err != nil {
		t.Fatal(err)
	}
	brk, err := broker.New(cat, nil, broker.Options{EnabledPlans: []string{"azure"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newCatalogHandler(brk)
	r := mux.NewRouter()
	r.Handle("/oauth/{region}/v2/catalog", h)
	for i := range 2 * maxCatalogRegions {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/oauth/region-"+strconv.Itoa(i)+"/v2/catalog", nil))
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Fatalf("region %d: status %d, %d bytes", i, rec.Code, rec.Body.Len())
		}
	}
	if n := len(h.byRgn); n != maxCatalogRegions {
		t.Errorf("%d prepared catalogs kept, want the bound %d", n, maxCatalogRegions)
	}
}
