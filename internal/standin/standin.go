// Package standin holds what keb's stand-ins of external services (AVS,
// EDP, IAS) share: the tokens they issue, the API requests they served, the
// failures tests inject, and strict JSON decoding, each stand-in refusing
// what its service refuses.
package standin

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Bounds of what a stand-in keeps.
const (
	MaxTokens   = 10000
	MaxRequests = 10000
	TokenTTL    = time.Hour
)

// Request is one API request a stand-in served.
type Request struct {
	Method, Path, Body string
	// Query is the raw query string.
	Query string
}

// ErrorWriter writes an error answer in the service's shape.
type ErrorWriter func(w http.ResponseWriter, status int, msg string)

// Core is a stand-in's shared state. Its lock also guards the stand-in's
// own state: API handlers wrapped by API run under it.
type Core struct {
	sync.Mutex
	tokens   map[string]time.Time
	faults   []int
	requests []Request
}

// NewCore returns an empty core.
func NewCore() *Core { return &Core{tokens: map[string]time.Time{}} }

// IssueToken hands out a new bearer token valid for TokenTTL; false when
// MaxTokens unexpired ones are out.
func (c *Core) IssueToken() (string, bool) {
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	tok := hex.EncodeToString(raw)
	c.Lock()
	defer c.Unlock()
	now := time.Now()
	for t, exp := range c.tokens {
		if now.After(exp) {
			delete(c.tokens, t)
		}
	}
	if len(c.tokens) >= MaxTokens {
		return "", false
	}
	c.tokens[tok] = now.Add(TokenTTL)
	return tok, true
}

// FailNext makes the next n API requests answer status.
func (c *Core) FailNext(n, status int) {
	c.Lock()
	defer c.Unlock()
	for range n {
		c.faults = append(c.faults, status)
	}
}

// Requests are the API requests served so far, oldest first.
func (c *Core) Requests() []Request {
	c.Lock()
	defer c.Unlock()
	return slices.Clone(c.requests)
}

// API wraps an API handler: it reads the body (at most 64 KiB), refuses a
// request without a token the stand-in issued (401), records the request,
// answers an injected failure, refuses a body that is not JSON (415), and
// runs h under the lock.
func (c *Core) API(writeError ErrorWriter, h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return c.Serve(c.bearer, "application/json", writeError, h)
}

// bearer reports whether r carries an unexpired token the stand-in issued;
// it runs under the lock.
func (c *Core) bearer(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	exp, known := c.tokens[tok]
	return ok && known && !time.Now().After(exp)
}

// Basic is an authentication of Serve: HTTP Basic with user and password.
func Basic(user, password string) func(r *http.Request) bool {
	return func(r *http.Request) bool {
		u, p, ok := r.BasicAuth()
		return ok && subtle.ConstantTimeCompare([]byte(u), []byte(user)) == 1 &&
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) == 1
	}
}

// Serve is API with another authentication (authorized runs under the
// lock) and another content type of request bodies.
func (c *Core) Serve(authorized func(r *http.Request) bool, contentType string, writeError ErrorWriter,
	h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "body too large")
			return
		}
		c.Lock()
		defer c.Unlock()
		if !authorized(r) {
			writeError(w, http.StatusUnauthorized, "missing or unknown credentials")
			return
		}
		if len(c.requests) >= MaxRequests {
			c.requests = slices.Delete(c.requests, 0, len(c.requests)/2)
		}
		c.requests = append(c.requests, Request{Method: r.Method, Path: r.URL.Path, Body: string(body), Query: r.URL.RawQuery})
		if len(c.faults) > 0 {
			status := c.faults[0]
			c.faults = c.faults[1:]
			writeError(w, status, "injected failure")
			return
		}
		if len(body) > 0 && r.Header.Get("Content-Type") != contentType {
			writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be "+contentType)
			return
		}
		h(w, r, body)
	}
}

// DecodeStrict decodes body into v, refusing unknown fields, trailing data
// and a type mismatch.
func DecodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteToken answers a token request with tok.
func WriteToken(w http.ResponseWriter, tok string) {
	WriteJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": int(TokenTTL.Seconds())})
}

// ClientCredentials reads a client-credentials token request: the form
// parsed, the client's ID and secret from HTTP Basic (form-encoded, RFC 6749
// 2.3.1) or else from the form; ok is false when the body or the Basic
// credentials are malformed, or the grant is another.
func ClientCredentials(w http.ResponseWriter, r *http.Request) (id, secret string, ok bool) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<14)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		return "", "", false
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		return r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), true
	}
	id, err1 := url.QueryUnescape(id)
	secret, err2 := url.QueryUnescape(secret)
	return id, secret, err1 == nil && err2 == nil
}
