package cis_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/devstack/cisstub"
)

const (
	clientID     = "cis-client"
	clientSecret = "cis-secret"
)

// newClient serves a stand-in over real HTTP and returns a client of it
// speaking version v with pages of pageSize.
func newClient(t *testing.T, v cis.Version, pageSize int, timeout time.Duration) (*cisstub.Server, *cis.Client) {
	t.Helper()
	stub := cisstub.New(clientID, clientSecret)
	srv := httptest.NewServer(stub.Handler(nil))
	t.Cleanup(srv.Close)
	path := cisstub.EventsV2Path
	if v == cis.V1 {
		path = cisstub.EventsV1Path
	}
	c, err := cis.New(cis.Config{Version: v, EventsURL: srv.URL + path, AuthURL: srv.URL + cisstub.TokenPath,
		ClientID: clientID, ClientSecret: clientSecret, PageSize: pageSize, Timeout: timeout,
		RetryInitial: 10 * time.Millisecond, RetryFor: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return stub, c
}

// collect walks every page from `from` and returns the events and the page
// numbers seen.
func collect(t *testing.T, c *cis.Client, from time.Time) ([]cis.Event, []int, error) {
	t.Helper()
	var events []cis.Event
	var pages []int
	err := c.SubaccountDeletes(t.Context(), from, func(p cis.Page) error {
		pages = append(pages, p.Number)
		events = append(events, p.Events...)
		return nil
	})
	return events, pages, err
}

func TestPagingInBothVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v     cis.Version
		pages []int
	}{{cis.V1, []int{0, 1, 2, 3}}, {cis.V2, []int{1, 2, 3, 4}}} {
		t.Run(string(tc.v), func(t *testing.T) {
			t.Parallel()
			stub, c := newClient(t, tc.v, 10, 5*time.Second)
			base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var want []cis.Event
			for i := range 35 {
				want = append(want, stub.AddAt(fmt.Sprintf("sa-%02d", i), base.Add(time.Duration(i)*time.Second)))
			}
			got, pages, err := collect(t, c, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(pages) != fmt.Sprint(tc.pages) {
				t.Errorf("pages %v, want %v", pages, tc.pages)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("events differ:\ngot  %v\nwant %v", got, want)
			}
			// From an action time on: the events at and after it.
			got, _, err = collect(t, c, want[30].ActionTime)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want[30:]) {
				t.Fatalf("from %v: %v, %v; want %v", want[30].ActionTime, got, err, want[30:])
			}
		})
	}
}

func TestNoEvents(t *testing.T) {
	t.Parallel()
	_, c := newClient(t, cis.V2, 10, 5*time.Second)
	got, pages, err := collect(t, c, time.Time{})
	if err != nil || len(got) != 0 || len(pages) != 0 {
		t.Fatalf("empty feed: %v, pages %v, %v", got, pages, err)
	}
}

func TestTransientFailuresAreRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault func(*cisstub.Server)
	}{
		{"500", func(s *cisstub.Server) { s.FailNext(2, http.StatusInternalServerError) }},
		{"503", func(s *cisstub.Server) { s.FailNext(1, http.StatusServiceUnavailable) }},
		{"429", func(s *cisstub.Server) { s.FailNext(3, http.StatusTooManyRequests) }},
		{"timeout", func(s *cisstub.Server) { s.StallNext(2, 2*time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stub, c := newClient(t, cis.V2, 5, 300*time.Millisecond)
			for i := range 12 {
				stub.Add(fmt.Sprintf("sa-%d", i))
			}
			tc.fault(stub)
			got, _, err := collect(t, c, time.Time{})
			if err != nil {
				t.Fatalf("walk failed instead of retrying: %v", err)
			}
			if len(got) != 12 {
				t.Fatalf("%d events, want 12", len(got))
			}
			if stub.Requests() <= 3 {
				t.Fatalf("%d requests for 3 pages: the failures were not retried", stub.Requests())
			}
		})
	}
}

func TestUnauthorizedIsReportedAtOnce(t *testing.T) {
	t.Parallel()
	t.Run("wrong secret", func(t *testing.T) {
		t.Parallel()
		stub := cisstub.New(clientID, clientSecret)
		srv := httptest.NewServer(stub.Handler(nil))
		t.Cleanup(srv.Close)
		c, err := cis.New(cis.Config{Version: cis.V1, EventsURL: srv.URL + cisstub.EventsV1Path, AuthURL: srv.URL + cisstub.TokenPath,
			ClientID: clientID, ClientSecret: "wrong", RetryInitial: 10 * time.Millisecond, RetryFor: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = collect(t, c, time.Time{})
		if !errors.Is(err, cis.ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
		if stub.Requests() != 0 {
			t.Fatalf("events endpoint called %d times without a token", stub.Requests())
		}
	})
	t.Run("401 from the events endpoint", func(t *testing.T) {
		t.Parallel()
		stub, c := newClient(t, cis.V2, 5, 5*time.Second)
		stub.Add("sa-1")
		stub.FailNext(1, http.StatusUnauthorized)
		_, _, err := collect(t, c, time.Time{})
		if !errors.Is(err, cis.ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
		if stub.Requests() != 1 {
			t.Fatalf("%d requests: a 401 must not be retried", stub.Requests())
		}
	})
	t.Run("403", func(t *testing.T) {
		t.Parallel()
		stub, c := newClient(t, cis.V2, 5, 5*time.Second)
		stub.FailNext(1, http.StatusForbidden)
		if _, _, err := collect(t, c, time.Time{}); !errors.Is(err, cis.ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
	})
}
