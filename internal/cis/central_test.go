package cis_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
)

// TestCentralCursorPaging reads 25 deletions from the stand-in of the
// central events API v2 in pages of 10: three pages, the first asked for by
// filter, the next two by the cursor alone; a 503 on the way is retried.
func TestCentralCursorPaging(t *testing.T) {
	t.Parallel()
	stub := cisstub.New(clientID, clientSecret)
	var mu sync.Mutex
	var queries []url.Values
	h := stub.Handler(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == cisstub.CentralEventsPath {
			mu.Lock()
			queries = append(queries, r.URL.Query())
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := cis.New(cis.Config{Version: cis.Central, EventsURL: srv.URL + cisstub.CentralEventsPath,
		AuthURL: srv.URL + cisstub.TokenPath, ClientID: clientID, ClientSecret: clientSecret, PageSize: 10,
		Timeout: 5 * time.Second, RetryInitial: 10 * time.Millisecond, RetryFor: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(-3 * 24 * time.Hour).UTC().Truncate(time.Millisecond)
	var want []cis.Event
	for i := range 25 {
		ev := stub.AddAt(fmt.Sprintf("sa-%02d", i), base.Add(time.Duration(i)*time.Minute))
		want = append(want, cis.Event{ID: ev.SubaccountID + "@" + fmt.Sprint(ev.ActionTime.UnixMilli()),
			SubaccountID: ev.SubaccountID, ActionTime: ev.ActionTime})
	}
	stub.AddAt("too-old", base.Add(-40*24*time.Hour)) // outside any since= window

	var got []cis.Event
	var pages []int
	fail := true
	err = c.SubaccountDeletes(t.Context(), base.Add(-time.Hour), func(p cis.Page) error {
		pages = append(pages, p.Number)
		got = append(got, p.Events...)
		if fail {
			stub.FailNext(1, http.StatusServiceUnavailable) // the second page's first try
			fail = false
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(pages) != "[1 2 3]" {
		t.Errorf("pages %v, want [1 2 3]", pages)
	}
	// The stand-in keeps events in insertion order; "too-old" came last
	// and is outside the window.
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events differ:\ngot  %v\nwant %v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queries) != 4 { // page 1, page 2 (503), page 2, page 3
		t.Fatalf("%d requests, want 4: %v", len(queries), queries)
	}
	first := queries[0]
	for k, v := range map[string]string{"eventType": "Subaccount_Deletion", "entityType": "Subaccount", "since": "4D",
		"pageSize": "10", "sortField": "creationTime", "sortOrder": "ASC"} {
		if first.Get(k) != v {
			t.Errorf("first request %s=%q, want %q", k, first.Get(k), v)
		}
	}
	for i, q := range queries[1:] {
		if len(q) != 1 || q.Get("cursor") == "" {
			t.Errorf("request %d: %v, want the cursor alone", i+2, q)
		}
	}
	if queries[1].Get("cursor") != queries[2].Get("cursor") || queries[2].Get("cursor") == queries[3].Get("cursor") {
		t.Errorf("cursors %v: the retry repeats page 2's, page 3 has its own", queries[1:])
	}
}

// TestCentralStandInRefusesWhatCISRefuses: the stand-in answers 400 where the
// central API does.
func TestCentralStandInRefusesWhatCISRefuses(t *testing.T) {
	t.Parallel()
	stub := cisstub.New(clientID, clientSecret)
	srv := httptest.NewServer(stub.Handler(nil))
	t.Cleanup(srv.Close)
	tok := token(t, srv.URL)
	ok := "eventType=Subaccount_Deletion&entityType=Subaccount&since=30D&pageSize=150&sortField=creationTime&sortOrder=ASC"
	for _, tc := range []struct{ name, query string }{
		{"since beyond 30 days", "eventType=Subaccount_Deletion&entityType=Subaccount&since=31D&pageSize=10&sortField=creationTime&sortOrder=ASC"},
		{"page too large", "eventType=Subaccount_Deletion&entityType=Subaccount&since=3D&pageSize=151&sortField=creationTime&sortOrder=ASC"},
		{"unknown event type", "eventType=SUBACCOUNT_DELETE&entityType=Subaccount&since=3D&pageSize=10&sortField=creationTime&sortOrder=ASC"},
		{"unknown parameter", ok + "&pageNum=1"},
		{"cursor with a filter", "cursor=abc&pageSize=10"},
		{"forged cursor", "cursor=not-one"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+cisstub.CentralEventsPath+"?"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", tc.name, resp.StatusCode)
		}
	}
}

// token gets a token of the stand-in at base.
func token(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.PostForm(base+cisstub.TokenPath, url.Values{"grant_type": {"client_credentials"},
		"client_id": {clientID}, "client_secret": {clientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.AccessToken == "" {
		t.Fatalf("token: %v", err)
	}
	return out.AccessToken
}
