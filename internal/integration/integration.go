// Package integration holds what keb's clients of the optional external
// services (internal/avs, internal/edp, internal/director) share: the
// observer of their calls, which metrics.Integrations is, and the HTTP
// client of a service with OAuth2 client credentials.
package integration

import (
	"context"
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
