// Package director is keb's client of Compass's Director: the GraphQL API
// where the landscape registers each runtime, labelled with its console
// URL. keb reads that label to confirm that the runtime it provisioned is
// registered with the dashboard URL keb hands out, as upstream's
// Check_Dashboard_URL (../shared/reference/integrations.md §8).
package director

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/kyma-keb/keb/internal/integration"
)

// Config is the APP_DIRECTOR_* settings group; off unless URL is set.
type Config struct {
	URL, OAuthTokenURL, OAuthClientID, OAuthClientSecret, OAuthScope string
}

// Configured reports whether keb asks the Director.
func (c Config) Configured() bool { return c.URL != "" }

// ConsoleURLLabel is the label the runtime's console URL is in.
const ConsoleURLLabel = "runtime_consoleUrl"

// Client asks the Director over GraphQL with client-credentials tokens.
type Client struct {
	cfg   Config
	http  *http.Client
	calls integration.Calls
}

// NewClient returns a client of cfg's Director; base carries the requests
// (nil: http.DefaultTransport), calls may be nil.
func NewClient(cfg Config, base *http.Client, calls integration.Calls) *Client {
	cc := clientcredentials.Config{ClientID: cfg.OAuthClientID, ClientSecret: cfg.OAuthClientSecret,
		TokenURL: cfg.OAuthTokenURL, Scopes: strings.Fields(cfg.OAuthScope)}
	return &Client{cfg: cfg, http: integration.ClientCredentials(cc, base), calls: calls}
}

// permanentError is an answer that retrying does not change.
type permanentError struct{ msg string }

func (e permanentError) Error() string { return e.msg }

// Temporary reports whether err may heal by retrying: everything but an
// answer that says the runtime failed or carries a malformed URL.
func Temporary(err error) bool {
	var p permanentError
	return err != nil && !errors.As(err, &p)
}

// ConsoleQuery is the GraphQL text of GetConsoleURL (no variables, as
// upstream).
func ConsoleQuery(runtimeID string) string {
	return fmt.Sprintf(`query { result: runtime(id: %s) { id labels(key: %s) status { condition } } }`,
		strconv.Quote(runtimeID), strconv.Quote(ConsoleURLLabel))
}

// ConsoleURL is the console URL the Director has for the runtime of the
// global account (the tenant).
func (c *Client) ConsoleURL(ctx context.Context, globalAccountID, runtimeID string) (string, error) {
	began := time.Now()
	status, u, err := c.consoleURL(ctx, globalAccountID, runtimeID)
	if c.calls != nil {
		c.calls.Observe("director", "get_console_url", status, err != nil, time.Since(began))
	}
	return u, err
}

func (c *Client) consoleURL(ctx context.Context, tenant, runtimeID string) (int, string, error) {
	body, _ := json.Marshal(map[string]string{"query": ConsoleQuery(runtimeID)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("tenant", tenant)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("Director: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, "", fmt.Errorf("Director: HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var out struct {
		Data struct {
			Result *struct {
				Labels map[string]any `json:"labels"`
				Status *struct {
					Condition string `json:"condition"`
				} `json:"status"`
			} `json:"result"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, "", fmt.Errorf("Director: decoding the answer: %w", err)
	}
	if len(out.Errors) > 0 {
		return resp.StatusCode, "", fmt.Errorf("Director: %s", out.Errors[0].Message)
	}
	r := out.Data.Result
	switch {
	case r == nil || r.Status == nil:
		return resp.StatusCode, "", fmt.Errorf("Director: runtime %s has no status yet", runtimeID)
	case r.Status.Condition == "FAILED":
		return resp.StatusCode, "", permanentError{fmt.Sprintf("the Director reports runtime %s FAILED", runtimeID)}
	}
	v, ok := r.Labels[ConsoleURLLabel]
	if !ok {
		return resp.StatusCode, "", fmt.Errorf("Director: runtime %s has no %s label yet", runtimeID, ConsoleURLLabel)
	}
	s, isString := v.(string)
	if u, err := url.Parse(s); !isString || err != nil || u.Scheme == "" || u.Host == "" {
		return resp.StatusCode, "", permanentError{fmt.Sprintf("the Director's %s of runtime %s is not a URL: %v", ConsoleURLLabel, runtimeID, v)}
	}
	return resp.StatusCode, s, nil
}
