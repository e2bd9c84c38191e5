package runtimelisting_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/runtimelisting"
	"github.com/kyma-keb/keb/internal/storage"
)

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		c    storage.RuntimeCursor
	}{
		{name: "microseconds", c: storage.RuntimeCursor{CreatedAt: time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC), InstanceID: "inst-1"}},
		{name: "id with separator", c: storage.RuntimeCursor{CreatedAt: time.Unix(0, 0).UTC(), InstanceID: "a|b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := runtimelisting.DecodeCursor(runtimelisting.EncodeCursor(tc.c))
			if err != nil || !got.CreatedAt.Equal(tc.c.CreatedAt) || got.InstanceID != tc.c.InstanceID {
				t.Fatalf("round trip of %+v gave %+v, %v", tc.c, got, err)
			}
		})
	}
}

func TestParseQuery(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		query   string
		wantErr bool
		check   func(storage.RuntimeQuery) bool
	}{
		{name: "defaults", query: "", check: func(q storage.RuntimeQuery) bool {
			return q.Page == 1 && q.PageSize == 100 && q.States == nil && !q.AllOperations
		}},
		{name: "state all", query: "state=all&state=failed", check: func(q storage.RuntimeQuery) bool {
			return len(q.States) == len(storage.RuntimeStates)
		}},
		{name: "repeated filters", query: "account=a&account=b&plan=trial", check: func(q storage.RuntimeQuery) bool {
			return len(q.GlobalAccountIDs) == 2 && len(q.Plans) == 1
		}},
		{name: "op_detail all", query: "op_detail=all", check: func(q storage.RuntimeQuery) bool { return q.AllOperations }},
		{name: "bindings", query: "bindings=true", check: func(q storage.RuntimeQuery) bool { return q.Bindings }},
		{name: "no bindings", query: "bindings=false", check: func(q storage.RuntimeQuery) bool { return !q.Bindings }},
		{name: "bindings yes", query: "bindings=yes", wantErr: true},
		{name: "kyma_state in Lifecycle Manager's spelling, whatever the case", query: "kyma_state=error&kyma_state=Error&kyma_state=WARNING",
			check: func(q storage.RuntimeQuery) bool {
				return slices.Equal(q.KymaStates, []string{"Error", "Warning"})
			}},
		{name: "unknown kyma_state", query: "kyma_state=Broken", wantErr: true},
		{name: "negative page", query: "page=-1", wantErr: true},
		{name: "page_size 101", query: "page_size=101", wantErr: true},
		// upstream's utils/keb.py pages with pageSize: read as page_size, not refused as unknown.
		{name: "pageSize as upstream's keb.py sends it", query: "instance_id=a&page=1&pageSize=100", check: func(q storage.RuntimeQuery) bool {
			return q.Page == 1 && q.PageSize == 100 && slices.Equal(q.InstanceIDs, []string{"a"})
		}},
		{name: "pageSize sets the page size", query: "pageSize=7", check: func(q storage.RuntimeQuery) bool { return q.PageSize == 7 }},
		{name: "pageSize equal to page_size", query: "pageSize=7&page_size=7", check: func(q storage.RuntimeQuery) bool { return q.PageSize == 7 }},
		{name: "pageSize and page_size differ", query: "pageSize=7&page_size=8", wantErr: true},
		{name: "pageSize 101", query: "pageSize=101", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, _ := url.ParseQuery(tc.query)
			q, err := runtimelisting.ParseQuery(v)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil && !tc.check(q) {
				t.Fatalf("query %+v", q)
			}
		})
	}
}

// pageStore answers every query with one fixed page.
type pageStore struct{ page storage.RuntimePage }

func (s pageStore) Actions(context.Context, ...string) (map[string][]storage.Action, error) {
	return nil, nil
}

func (s pageStore) Runtimes(context.Context, storage.RuntimeQuery) (storage.RuntimePage, error) {
	return s.page, nil
}

func TestExpiredAtShownOnlyWhenSet(t *testing.T) {
	t.Parallel()
	expired := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	h := runtimelisting.NewHandler(pageStore{storage.RuntimePage{Total: 2, Runtimes: []storage.Runtime{
		{InstanceID: "expired", State: storage.RuntimeSuspended, ExpiredAt: &expired},
		{InstanceID: "running", State: storage.RuntimeSucceeded},
	}}}, "svc", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/info/runtimes", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var body struct {
		Data []struct {
			Status map[string]any `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Data) != 2 {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	if got := body.Data[0].Status["expiredAt"]; got != "2026-05-06T07:08:09Z" {
		t.Errorf("expired runtime: expiredAt %v, want 2026-05-06T07:08:09Z", got)
	}
	if got, has := body.Data[1].Status["expiredAt"]; has {
		t.Errorf("running runtime: expiredAt %v, want it omitted", got)
	}
}

// crs answers RuntimeConfigs from a fixed map, or fails; it records the IDs
// asked for.
type crs struct {
	byID  map[string]json.RawMessage
	err   error
	asked [][]string
}

func (c *crs) RuntimeConfigs(_ context.Context, ids []string) (map[string]json.RawMessage, error) {
	c.asked = append(c.asked, ids)
	return c.byID, c.err
}

// TestRuntimeConfigPerPage: runtime_config=true asks for the page's Runtime
// CRs once, shows each on its runtime (none on one without a runtime ID or
// a CR), and a control plane that cannot answer is a 503 saying so, not a
// listing without the field.
func TestRuntimeConfigPerPage(t *testing.T) {
	t.Parallel()
	page := pageStore{storage.RuntimePage{Total: 3, Runtimes: []storage.Runtime{
		{InstanceID: "a", RuntimeID: "rt-a", State: storage.RuntimeSucceeded},
		{InstanceID: "b", RuntimeID: "rt-b", State: storage.RuntimeSucceeded},
		{InstanceID: "c", State: storage.RuntimeProvisioning},
	}}}
	cp := &crs{byID: map[string]json.RawMessage{"rt-a": json.RawMessage(`{"kind":"Runtime","metadata":{"name":"rt-a"}}`)}}
	rec := httptest.NewRecorder()
	runtimelisting.NewHandler(page, "svc", cp).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/runtimes?runtime_config=true", nil))
	var body struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != http.StatusOK || err != nil || len(body.Data) != 3 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if len(cp.asked) != 1 || !slices.Equal(cp.asked[0], []string{"rt-a", "rt-b"}) {
		t.Errorf("asked the control plane %v, want once for [rt-a rt-b]", cp.asked)
	}
	if cr, _ := body.Data[0]["runtimeConfig"].(map[string]any); cr["kind"] != "Runtime" {
		t.Errorf("runtime a: runtimeConfig %v", body.Data[0]["runtimeConfig"])
	}
	for _, d := range body.Data[1:] {
		if _, has := d["runtimeConfig"]; has {
			t.Errorf("runtime %v without a CR shows runtimeConfig", d["instanceID"])
		}
	}

	// Without runtime_config the control plane is not asked.
	cp.asked = nil
	rec = httptest.NewRecorder()
	runtimelisting.NewHandler(page, "svc", cp).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/runtimes", nil))
	if rec.Code != http.StatusOK || len(cp.asked) != 0 {
		t.Errorf("without runtime_config: %d, asked %v", rec.Code, cp.asked)
	}

	rec = httptest.NewRecorder()
	runtimelisting.NewHandler(page, "svc", &crs{err: errors.New("connection refused")}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/runtimes?runtime_config=true", nil))
	var e map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != http.StatusServiceUnavailable || err != nil ||
		e["error"] != "ServiceUnavailable" || !strings.Contains(e["description"], "Runtime CRs") {
		t.Errorf("control plane down: %d %s", rec.Code, rec.Body)
	}
}
