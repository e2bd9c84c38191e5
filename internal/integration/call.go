package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Caller makes the calls of one service's API and observes each. What the
// services do differently (credentials, answer size, how a broken answer
// counts) are its fields, so that each client keeps its upstream's rules
// while the call itself has one home.
type Caller struct {
	// Service names the service as its errors show it ("AVS"); lower-cased,
	// it is the metrics' integration label.
	Service string
	HTTP    *http.Client
	// Calls may be nil.
	Calls Calls
	// Limit is how many bytes of an answer are read.
	Limit int64
	// Prepare, when set, adds the service's credentials (and the like) to
	// each request; its error ends the call as one without an answer.
	Prepare func(ctx context.Context, req *http.Request) error
	// RetryUnauthorized gives a 401 one more try, and Prepare with it a
	// fresh token (AVS).
	RetryUnauthorized bool
	// IgnoreReadErrors takes an answer whose body breaks off as what
	// arrived of it (EDP, IAS, as upstream) rather than as an error.
	IgnoreReadErrors bool
	// UndecodableIsUnanswered makes an answer that is no JSON a plain error,
	// as if none had come (AVS: so it is retried), rather than an
	// HTTPError of its status.
	UndecodableIsUnanswered bool
}

// Call is one call of a service's API.
type Call struct {
	// Name is the call's name in errors and metrics.
	Name        string
	Method, URL string
	// In is the request's body: none when nil, a form when url.Values,
	// JSON otherwise.
	In any
	// Out, when set, receives a successful answer's JSON (a 404 taken as
	// success has none).
	Out any
	// Success tells which statuses are a success.
	Success func(status int) bool
	// DecodeFirst decodes the answer into Out before its status is looked
	// at (LMS's tenant creation, as upstream): an answer that is no JSON
	// is an error whatever its status.
	DecodeFirst bool
}

// Statuses is a Call's Success that accepts exactly these statuses.
func Statuses(ok ...int) func(int) bool {
	return func(status int) bool {
		for _, s := range ok {
			if status == s {
				return true
			}
		}
		return false
	}
}

// Do makes call, with one more try after a 401 if c says so, and observes
// it as one call.
func (c *Caller) Do(ctx context.Context, call Call) error {
	began := time.Now()
	status, err := c.attempt(ctx, call)
	if c.RetryUnauthorized && status == http.StatusUnauthorized {
		status, err = c.attempt(ctx, call)
	}
	if c.Calls != nil {
		c.Calls.Observe(strings.ToLower(c.Service), call.Name, status, err != nil, time.Since(began))
	}
	return err
}

// attempt makes one request of call; the status is 0 when nothing was
// answered.
func (c *Caller) attempt(ctx context.Context, call Call) (int, error) {
	req, err := c.request(ctx, call)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", c.Service, call.Name, err)
	}
	defer resp.Body.Close()
	status := resp.StatusCode
	raw, err := io.ReadAll(io.LimitReader(resp.Body, c.Limit))
	if err != nil && !c.IgnoreReadErrors {
		return status, fmt.Errorf("%s %s: reading the answer: %w", c.Service, call.Name, err)
	}
	success := call.Success(status)
	if call.Out != nil && (call.DecodeFirst || (success && status != http.StatusNotFound)) {
		if err := json.Unmarshal(raw, call.Out); err != nil {
			if c.UndecodableIsUnanswered {
				return status, fmt.Errorf("%s %s: decoding the answer: %w", c.Service, call.Name, err)
			}
			return status, &HTTPError{Service: c.Service, Call: call.Name, Status: status, Body: "undecodable answer: " + err.Error()}
		}
	}
	if !success {
		return status, &HTTPError{Service: c.Service, Call: call.Name, Status: status, Body: string(raw)}
	}
	return status, nil
}

// request is call's request, its body encoded and c.Prepare applied.
func (c *Caller) request(ctx context.Context, call Call) (*http.Request, error) {
	var body io.Reader
	contentType := ""
	switch in := call.In.(type) {
	case nil:
	case url.Values:
		body, contentType = strings.NewReader(in.Encode()), "application/x-www-form-urlencoded"
	default:
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encoding the request: %w", c.Service, call.Name, err)
		}
		body, contentType = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, call.Method, call.URL, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.Service, call.Name, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Prepare != nil {
		if err := c.Prepare(ctx, req); err != nil {
			return nil, err
		}
	}
	return req, nil
}
