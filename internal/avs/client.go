package avs

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

	"github.com/kyma-keb/keb/internal/integration"
)

// Client calls the AVS evaluation API.
type Client struct {
	cfg   Config
	http  *http.Client
	calls integration.Calls
}

// NewClient returns a client of the API cfg names; calls may be nil.
func NewClient(cfg Config, httpClient *http.Client, calls integration.Calls) *Client {
	if httpClient == nil {
		// Upstream set no timeout; a bound keeps a hung AVS from holding a
		// worker until the job's timeout.
		httpClient = &http.Client{Timeout: integration.Timeout}
	}
	return &Client{cfg: cfg, http: httpClient, calls: calls}
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

// do makes one API call with a fresh token; a 401 gets one more try with
// another token.
func (c *Client) do(ctx context.Context, call, method, target string, in, out any, ok ...int) error {
	began := time.Now()
	status, err := c.attempt(ctx, call, method, target, in, out, ok)
	if status == http.StatusUnauthorized {
		status, err = c.attempt(ctx, call, method, target, in, out, ok)
	}
	if c.calls != nil {
		c.calls.Observe("avs", call, status, err != nil, time.Since(began))
	}
	return err
}

func (c *Client) attempt(ctx context.Context, call, method, target string, in, out any, ok []int) (int, error) {
	token, err := c.token(ctx)
	if err != nil {
		return 0, tokenError{err}
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("AVS %s: encoding the request: %w", call, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return 0, fmt.Errorf("AVS %s: %w", call, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("AVS %s: %w", call, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("AVS %s: reading the answer: %w", call, err)
	}
	success := false
	for _, s := range ok {
		success = success || resp.StatusCode == s
	}
	if !success {
		return resp.StatusCode, &integration.HTTPError{Service: "AVS", Call: call, Status: resp.StatusCode, Body: string(raw)}
	}
	if out != nil && resp.StatusCode != http.StatusNotFound {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("AVS %s: decoding the answer: %w", call, err)
		}
	}
	return resp.StatusCode, nil
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
