package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/integration"
)

// observed records the observations of calls made one after another.
type observed []string

func (o *observed) Observe(integration, call string, status int, failed bool, _ time.Duration) {
	*o = append(*o, fmt.Sprintf("%s %s %d %t", integration, call, status, failed))
}

// service answers each path as the test needs: /json a JSON object,
// /text 500 with a body that is no JSON, /cut 201 with its body broken off,
// /echo the request's content type and body as JSON.
func service(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			_, _ = io.WriteString(w, `{"id":"a"}`)
		case "/text":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "upstream fell over")
		case "/cut":
			// Fewer bytes than announced: the server drops the connection.
			w.Header().Set("Content-Length", "100")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":`)
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			_, _ = fmt.Fprintf(w, `{"type":%q,"body":%q}`, r.Header.Get("Content-Type"), b)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The services' differing rules for a broken answer: LMS's decodeFirst
// refuses a failure that is no JSON as undecodable, AVS's no-JSON answer is
// a plain error (retried), EDP and IAS take a cut answer as what arrived.
func TestCallerBrokenAnswers(t *testing.T) {
	t.Parallel()
	srv := service(t)
	below400 := func(status int) bool { return status < 400 }
	var out struct {
		ID string `json:"id"`
	}
	for _, tc := range []struct {
		name     string
		caller   integration.Caller
		call     integration.Call
		wantErr  string // "" for success
		answered bool
	}{
		{"failure as is", integration.Caller{}, integration.Call{URL: "/text", Out: &out, Success: below400},
			"HTTP 500: upstream fell over", true},
		{"decode first", integration.Caller{}, integration.Call{URL: "/text", Out: &out, Success: below400, DecodeFirst: true},
			"HTTP 500: undecodable answer", true},
		{"undecodable success", integration.Caller{}, integration.Call{URL: "/text", Out: &out, Success: integration.Statuses(500)},
			"HTTP 500: undecodable answer", true},
		{"undecodable as unanswered", integration.Caller{UndecodableIsUnanswered: true},
			integration.Call{URL: "/text", Out: &out, Success: integration.Statuses(500)}, "decoding the answer", false},
		{"cut answer", integration.Caller{}, integration.Call{URL: "/cut", Success: integration.Statuses(201)},
			"reading the answer", false},
		{"cut answer ignored", integration.Caller{IgnoreReadErrors: true},
			integration.Call{URL: "/cut", Success: integration.Statuses(201)}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.caller
			c.Service, c.HTTP, c.Limit = "SVC", srv.Client(), 1<<10
			tc.call.Name, tc.call.Method, tc.call.URL = "get", http.MethodGet, srv.URL+tc.call.URL
			err := c.Do(t.Context(), tc.call)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Do: %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "SVC get") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Do: %v, want an error of SVC get naming %q", err, tc.wantErr)
			}
			if _, answered := integration.Status(err); answered != tc.answered {
				t.Errorf("Do: %v is an HTTPError: %t, want %t", err, answered, tc.answered)
			}
		})
	}
}

// A request's body is JSON, or a form for url.Values; Prepare's error ends
// the call unanswered; the observation names the service in lower case.
func TestCallerRequestsAndObservations(t *testing.T) {
	t.Parallel()
	srv := service(t)
	calls := &observed{}
	noToken := errors.New("no token")
	prepared := 0
	c := integration.Caller{Service: "SVC", HTTP: srv.Client(), Calls: calls, Limit: 1 << 10,
		Prepare: func(_ context.Context, req *http.Request) error {
			prepared++
			if req.URL.Query().Get("token") == "none" {
				return noToken
			}
			return nil
		}}
	var echo struct{ Type, Body string }
	for _, tc := range []struct {
		in             any
		wantType, body string
	}{
		{map[string]int{"a": 1}, "application/json", `{"a":1}`},
		{url.Values{"a": {"1 2"}}, "application/x-www-form-urlencoded", "a=1+2"},
		{nil, "", ""},
	} {
		err := c.Do(t.Context(), integration.Call{Name: "echo", Method: http.MethodPost, URL: srv.URL + "/echo",
			In: tc.in, Out: &echo, Success: integration.Statuses(http.StatusOK)})
		if err != nil || echo.Type != tc.wantType || echo.Body != tc.body {
			t.Errorf("Do(%v): sent %q as %q, %v; want %q as %q", tc.in, echo.Body, echo.Type, err, tc.body, tc.wantType)
		}
	}
	err := c.Do(t.Context(), integration.Call{Name: "echo", Method: http.MethodGet, URL: srv.URL + "/echo?token=none",
		Success: integration.Statuses(http.StatusOK)})
	if !errors.Is(err, noToken) {
		t.Errorf("Do without a token: %v, want Prepare's error", err)
	}
	if prepared != 4 {
		t.Errorf("Prepare ran %d times, want once a request (4)", prepared)
	}
	want := []string{"svc echo 200 false", "svc echo 200 false", "svc echo 200 false", "svc echo 0 true"}
	if fmt.Sprint(*calls) != fmt.Sprint(want) {
		t.Errorf("observed %q, want %q", *calls, want)
	}
}
