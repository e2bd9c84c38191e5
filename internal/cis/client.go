// Package cis reads subaccount deletions from the SAP Cloud Management
// (CIS) events API: the central events API v2 (cursor paging, the default)
// or the retired page-number APIs v1.0 and v2.0, with OAuth2 client
// credentials, page by page, retrying what a retry can fix (timeouts, 5xx, 429) and
// failing at once with ErrUnauthorized on 401/403.
package cis

import (
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

	"github.com/cenkalti/backoff/v4"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Version is the events API version (APP_CLIENT_VERSION).
type Version string

// The versions keb speaks. They differ in page numbering (v1.0 counts from
// 0, v2.0 from 1) and in the event's shape (see event.go).
const (
	V1 Version = "v1.0"
	V2 Version = "v2.0"
)

// EventTypeSubaccountDelete is the only event type keb asks for.
const EventTypeSubaccountDelete = "SUBACCOUNT_DELETE"

// ErrUnauthorized is returned when CIS refuses the credentials (401) or the
// token's scopes (403): retrying cannot help, an operator must fix the
// client ID, secret or role collection.
var ErrUnauthorized = errors.New("CIS refused the credentials")

// Config is how to reach CIS.
type Config struct {
	Version Version
	// EventsURL is the events endpoint (APP_CIS_EVENT_SERVICE_URL); the
	// query is added to it.
	EventsURL string
	// AuthURL is the OAuth2 token endpoint (APP_CIS_AUTH_URL).
	AuthURL      string
	ClientID     string
	ClientSecret string
	// PageSize is how many events one page holds.
	PageSize int
	// Timeout bounds one HTTP request (token or page).
	Timeout time.Duration
	// RetryFor bounds the retries of one page; RetryInitial is the first
	// wait, doubled (with jitter) after each failure.
	RetryFor     time.Duration
	RetryInitial time.Duration
}

// Defaults for the zero fields of Config.
const (
	DefaultPageSize     = 100
	DefaultTimeout      = 30 * time.Second
	DefaultRetryFor     = 2 * time.Minute
	DefaultRetryInitial = 500 * time.Millisecond
)

// Event is one SUBACCOUNT_DELETE event.
type Event struct {
	ID           string
	SubaccountID string
	ActionTime   time.Time
}

// Page is one page of events, in action-time order.
type Page struct {
	Events []Event
	// Number is the page number as the API counts (from 0 in v1.0, 1 in v2.0).
	Number     int
	TotalPages int
	Total      int
}

// Client reads events from CIS.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Version != V1 && cfg.Version != V2 && cfg.Version != Central {
		return nil, fmt.Errorf("CIS client version %q: use %s, %s or %s", cfg.Version, Central, V1, V2)
	}
	if cfg.EventsURL == "" || cfg.AuthURL == "" {
		return nil, errors.New("CIS client needs the events URL and the token URL")
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.RetryFor <= 0 {
		cfg.RetryFor = DefaultRetryFor
	}
	if cfg.RetryInitial <= 0 {
		cfg.RetryInitial = DefaultRetryInitial
	}
	cc := clientcredentials.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.AuthURL}
	// The token request gets the same timeout as the pages: oauth2 uses the
	// client found in the context it is built with.
	base := &http.Client{Timeout: cfg.Timeout}
	hc := cc.Client(context.WithValue(context.Background(), oauth2.HTTPClient, base))
	hc.Timeout = cfg.Timeout
	return &Client{cfg: cfg, http: hc}, nil
}

// Version returns the API version the client speaks.
func (c *Client) Version() Version { return c.cfg.Version }

// firstPage is the number of the first page in the client's API version.
func (c *Client) firstPage() int {
	if c.cfg.Version == V1 {
		return 0
	}
	return 1
}

// SubaccountDeletes calls fn with every page of SUBACCOUNT_DELETE events with
// an action time at or after from, oldest first, following the page count
// the API returns. An error of fn stops the walk and is returned.
func (c *Client) SubaccountDeletes(ctx context.Context, from time.Time, fn func(Page) error) error {
	if c.cfg.Version == Central {
		return c.centralDeletes(ctx, from, fn)
	}
	for n := c.firstPage(); ; n++ {
		page, err := c.Page(ctx, from, n)
		if err != nil {
			return err
		}
		if page.Number != n {
			return fmt.Errorf("CIS answered page %d when asked for page %d", page.Number, n)
		}
		if len(page.Events) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		last := page.TotalPages - 1 + c.firstPage()
		if n >= last || len(page.Events) == 0 {
			return nil
		}
	}
}

// Page fetches one page of events, retrying timeouts, 5xx and 429.
func (c *Client) Page(ctx context.Context, from time.Time, number int) (Page, error) {
	u, err := url.Parse(c.cfg.EventsURL)
	if err != nil {
		return Page{}, fmt.Errorf("parsing CIS events URL: %w", err)
	}
	q := u.Query()
	q.Set("eventType", EventTypeSubaccountDelete)
	q.Set("pageSize", strconv.Itoa(c.cfg.PageSize))
	q.Set("pageNum", strconv.Itoa(number))
	q.Set("sortField", "actionTime")
	q.Set("sortOrder", "ASC")
	if !from.IsZero() {
		q.Set("fromActionTime", strconv.FormatInt(from.UnixMilli(), 10))
	}
	u.RawQuery = q.Encode()

	var page Page
	err = c.retrying(ctx, fmt.Sprintf("page %d", number), u.String(), func(body []byte) error {
		p, err := decodePage(c.cfg.Version, body)
		page = p
		return err
	})
	return page, err
}

// retryAfter is a failure CIS asked to retry after a while (429, 503).
type retryAfter struct {
	err   error
	after time.Duration
}

func (r *retryAfter) Error() string { return r.err.Error() }
func (r *retryAfter) Unwrap() error { return r.err }

// get makes one request and returns a 200's body. Errors worth a retry are
// returned as they are; the others are backoff.Permanent.
func (c *Client) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, backoff.Permanent(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil {
			return nil, classify(re.Response.StatusCode, "token endpoint", string(re.Body), re.Response.Header)
		}
		if ctx.Err() != nil {
			return nil, backoff.Permanent(ctx.Err())
		}
		return nil, err // timeouts, refused connections: retried
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading CIS answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, classify(resp.StatusCode, "events endpoint", string(body), resp.Header)
	}
	return body, nil
}

// StatusError is CIS's answer other than 200.
type StatusError struct {
	Status int
	msg    string
}

func (e *StatusError) Error() string { return e.msg }

// classify turns a non-200 answer into an error: 401/403 ErrUnauthorized and
// 4xx other than 429 permanent, the rest retried.
func classify(status int, what, body string, h http.Header) error {
	body = strings.TrimSpace(body)
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	err := &StatusError{Status: status, msg: fmt.Sprintf("CIS %s answered %d %s: %s", what, status, http.StatusText(status), body)}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return backoff.Permanent(fmt.Errorf("%w (check APP_CIS_CLIENT_ID, the client secret and the client's scopes): %w", ErrUnauthorized, err))
	case status == http.StatusTooManyRequests || status >= 500:
		if s, perr := strconv.Atoi(h.Get("Retry-After")); perr == nil && s > 0 {
			return &retryAfter{err: err, after: time.Duration(s) * time.Second}
		}
		return err
	default:
		return backoff.Permanent(err)
	}
}

// decodePage reads a page in the version's shape.
func decodePage(v Version, body []byte) (Page, error) {
	var raw WirePage[json.RawMessage]
	if err := json.Unmarshal(body, &raw); err != nil {
		return Page{}, fmt.Errorf("decoding CIS events page: %w", err)
	}
	p := Page{Number: raw.PageNum, TotalPages: raw.TotalPages, Total: raw.Total}
	for _, e := range raw.Events {
		ev, err := decodeEvent(v, e)
		if err != nil {
			return Page{}, err
		}
		p.Events = append(p.Events, ev)
	}
	return p, nil
}
