package avs

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

	"github.com/kyma-keb/keb/internal/integration"
)

// Client calls the AVS evaluation API.
type Client struct {
	cfg    Config
	http   *http.Client
	caller integration.Caller
}

// NewClient returns a client of the API cfg names; calls may be nil.
func NewClient(cfg Config, httpClient *http.Client, calls integration.Calls) *Client {
	if httpClient == nil {
		// Upstream set no timeout; a bound keeps a hung AVS from holding a
		// worker until the job's timeout.
		httpClient = &http.Client{Timeout: integration.Timeout}
	}
	c := &Client{cfg: cfg, http: httpClient}
	// Upstream: a fresh token for every request, another after a 401;
	// an answer that is no JSON is retried.
	c.caller = integration.Caller{Service: "AVS", HTTP: httpClient, Calls: calls, Limit: 1 << 20,
		Prepare: c.authorize, RetryUnauthorized: true, UndecodableIsUnanswered: true}
	return c
}

// Temporary reports whether err may heal by retrying: no answer, no token,
// or an answer ≥ 500.
func Temporary(err error) bool {
	if status, answered := integration.Status(err); answered {
		return status >= 500
	}
	return err != nil
}

// errNoToken is a failure to get a token: temporary.
type tokenError struct{ err error }

func (e tokenError) Error() string { return "AVS token: " + e.err.Error() }
func (e tokenError) Unwrap() error { return e.err }

// CreateEvaluation creates an evaluation.
func (c *Client) CreateEvaluation(ctx context.Context, req CreateRequest) (Evaluation, error) {
	var ev Evaluation
	err := c.do(ctx, "create_evaluation", http.MethodPost, c.base(), req, &ev, http.StatusOK, http.StatusCreated)
	if err == nil && ev.ID == 0 {
		err = errors.New("AVS create_evaluation: the answer has no id")
	}
	return ev, err
}

// GetEvaluation reads an evaluation.
func (c *Client) GetEvaluation(ctx context.Context, id int64) (Evaluation, error) {
	var ev Evaluation
	err := c.do(ctx, "get_evaluation", http.MethodGet, c.item(id), nil, &ev, http.StatusOK)
	return ev, err
}

// SetStatus sets an evaluation's lifecycle status; a gone evaluation is
// no error.
func (c *Client) SetStatus(ctx context.Context, id int64, s Status) error {
	return c.do(ctx, "set_status", http.MethodPut, c.item(id)+"/lifecycle", string(s), nil,
		http.StatusOK, http.StatusCreated, http.StatusNotFound)
}

// Detach removes an evaluation from its parent; one that is not (or no
// longer) the parent's child is no error.
func (c *Client) Detach(ctx context.Context, parent, id int64) error {
	err := c.do(ctx, "detach_evaluation", http.MethodDelete, c.item(parent)+"/child/"+strconv.FormatInt(id, 10), nil, nil,
		http.StatusOK, http.StatusCreated, http.StatusNotFound)
	var e *integration.HTTPError
	if errors.As(err, &e) && e.Status == http.StatusBadRequest {
		var body struct {
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(e.Body), &body) == nil && strings.Contains(body.Message, "does not contain subevaluation") {
			return nil
		}
	}
	return err
}

// DeleteEvaluation deletes an evaluation; a gone one is no error.
func (c *Client) DeleteEvaluation(ctx context.Context, id int64) error {
	return c.do(ctx, "delete_evaluation", http.MethodDelete, c.item(id), nil, nil,
		http.StatusOK, http.StatusCreated, http.StatusNotFound)
}

func (c *Client) base() string { return c.cfg.APIEndpoint }

func (c *Client) item(id int64) string {
	return strings.TrimSuffix(c.cfg.APIEndpoint, "/") + "/" + strconv.FormatInt(id, 10)
}

func (c *Client) do(ctx context.Context, call, method, target string, in, out any, ok ...int) error {
	return c.caller.Do(ctx, integration.Call{Name: call, Method: method, URL: target, In: in, Out: out,
		Success: integration.Statuses(ok...)})
}

// authorize gives req a new token.
func (c *Client) authorize(ctx context.Context, req *http.Request) error {
	token, err := c.token(ctx)
	if err != nil {
		return tokenError{err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return nil
}

// token gets a new token with the resource-owner password grant, the client
// ID in HTTP Basic with an empty secret.
func (c *Client) token(ctx context.Context) (string, error) {
	form := url.Values{"grant_type": {"password"}, "username": {c.cfg.OAuthUsername}, "password": {c.cfg.OAuthPassword}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.OAuthTokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.cfg.OAuthClientID), "")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil || tok.AccessToken == "" {
		return "", fmt.Errorf("no access_token in the answer: %.200s", raw)
	}
	return tok.AccessToken, nil
}
