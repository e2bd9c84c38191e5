// Package integration holds what keb's clients of the optional external
// services (internal/avs, edp, ias, lms, director) share: the call itself
// (Caller: the request, its answer, its observation), the observer of their
// calls, which metrics.Integrations is, the error of an answer that is not a
// success, and the HTTP client of a service with OAuth2 client credentials.
package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Calls observes each call to a service's API, for metrics.
type Calls interface {
	// Observe records one call: the service, the call's name, the HTTP
	// status (0: no answer, or no token), whether it failed, and how long
	// it took, its token request included.
	Observe(integration, call string, status int, failed bool, took time.Duration)
}

// Timeout bounds one call, so that a hung service holds no worker for
// long.
const Timeout = 30 * time.Second

// ClientCredentials is an HTTP client that authenticates with cc's tokens,
// kept until they expire; base carries the requests (nil:
// http.DefaultClient).
func ClientCredentials(cc clientcredentials.Config, base *http.Client) *http.Client {
	ctx := context.Background()
	if base != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, base)
	}
	hc := oauth2.NewClient(ctx, cc.TokenSource(ctx))
	hc.Timeout = Timeout
	return hc
}

// HTTPError is a service's answer that is not a success. Whether it may
// heal by retrying is each service's own rule (avs.Temporary,
// edp.Temporary, ...), so it is not decided here.
type HTTPError struct {
	// Service names the service as its messages show it: "AVS", "EDP".
	Service string
	// Call is the call's name, as in the metrics.
	Call   string
	Status int
	// Body is the answer's body (or why it was unusable).
	Body string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %.200s", e.Service, e.Call, e.Status, e.Body)
}

// Status is err's HTTP status when err is (or wraps) an HTTPError, and
// false when there was no answer.
func Status(err error) (int, bool) {
	var e *HTTPError
	if errors.As(err, &e) {
		return e.Status, true
	}
	return 0, false
}
