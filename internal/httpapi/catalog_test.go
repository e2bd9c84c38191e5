package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/catalog"
)

func TestCatalogCarriesAnETagAndAnswers304(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Load("")
	if err != nil {
		t.Fatal(err)
	}
	brk, err := broker.New(cat, nil, broker.Options{EnabledPlans: []string{"azure", "gcp", "trial"}}, nil)
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
	get := func(ifNoneMatch string) (*http.Response, []byte) {
		req := httptest.NewRequest(http.MethodGet, "/oauth/v2/catalog", nil)
		if ifNoneMatch != "" {
			req.Header.Set("If-None-Match", ifNoneMatch)
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

	res, want := get("")
	etag := res.Header.Get("ETag")
	if res.StatusCode != http.StatusOK || len(want) == 0 || len(etag) < 3 || etag[0] != '"' {
		t.Fatalf("status %d, %d bytes, ETag %q; want the catalog with a quoted entity tag", res.StatusCode, len(want), etag)
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		res, body := get(inm)
		if res.StatusCode != http.StatusNotModified || len(body) != 0 || res.Header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: status %d, %d body bytes, ETag %q; want 304 with the ETag and no body",
				inm, res.StatusCode, len(body), res.Header.Get("ETag"))
		}
	}
	if res, body := get(`"stale"`); res.StatusCode != http.StatusOK || string(body) != string(want) {
		t.Errorf("stale If-None-Match: status %d, want 200 with the catalog", res.StatusCode)
	}
}
