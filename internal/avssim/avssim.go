// Package avssim is a stand-in for SAP's Availability Service (AVS), for
// tests and `keb dev`: the OAuth2 password-grant token endpoint and the
// evaluation API keb uses (../shared/reference/integrations.md §3), as a
// plain HTTP server. It is as strict as the contract: a token request
// needs the client ID in HTTP Basic (empty secret) and the user's password,
// every API call a token it handed out, every body the exact JSON shape
// (unknown fields, a numeric threshold or a status AVS does not know are
// refused), and children hang only under parents it knows.
//
// Routes, relative to where the handler is mounted:
//
//	POST   /oauth/token                         grant_type=password → {"access_token",...}
//	POST   /api/v2/evaluationmetadata           create an evaluation → 200 {"id",...}
//	GET    /api/v2/evaluationmetadata/<id>      read one
//	POST   /api/v2/evaluationmetadata/<id>/tag  add a tag
//	PUT    /api/v2/evaluationmetadata/<id>/lifecycle   a bare JSON string status
//	DELETE /api/v2/evaluationmetadata/<parent>/child/<id>  detach (400 "does not contain subevaluation")
//	DELETE /api/v2/evaluationmetadata/<id>      delete (404 when unknown)
//
// Tests can make it fail the next API requests (FailNext) and read every
// API request it served (Requests).
package avssim

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kyma-keb/keb/internal/avs"
)

// Paths of the stand-in, relative to its mount point.
const (
	TokenPath = "/oauth/token"
	APIPath   = "/api/v2/evaluationmetadata"
)

// Bounds of what it keeps.
const (
	MaxEvaluations = 100000
	MaxTokens      = 10000
	MaxRequests    = 10000
	tokenTTL       = time.Hour
)

// Options are the credentials it accepts and the parent evaluations that
// exist before keb creates any.
type Options struct {
	ClientID, Username, Password string
	// Parents are the IDs of the parent evaluations (APP_AVS_PARENT_ID,
	// APP_AVS_TRIAL_PARENT_ID).
	Parents []int64
}

// Evaluation is one evaluation the stand-in holds.
type Evaluation struct {
	avs.CreateRequest
	ID       int64
	Status   avs.Status
	Children []int64
}

// Request is one API request it served: method, path and body.
type Request struct {
	Method, Path string
	Body         string
}

// Server is the stand-in's state.
type Server struct {
	opts Options

	mu          sync.Mutex
	evaluations map[int64]*Evaluation
	nextID      int64
	tokens      map[string]time.Time
	faults      []int
	requests    []Request
}

// New returns a stand-in with opts.
func New(opts Options) *Server {
	s := &Server{opts: opts, evaluations: map[int64]*Evaluation{}, tokens: map[string]time.Time{}, nextID: 1000}
	for _, p := range opts.Parents {
		s.evaluations[p] = &Evaluation{ID: p, Status: avs.StatusActive,
			CreateRequest: avs.CreateRequest{Name: "parent-" + strconv.FormatInt(p, 10), DefinitionType: "BASIC"}}
	}
	return s
}

// FailNext makes the next n API requests (not token requests) answer status.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, status)
	}
}

// Requests are the API requests served so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Evaluations are the evaluations that exist, parents included.
func (s *Server) Evaluations() map[int64]Evaluation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]Evaluation, len(s.evaluations))
	for id, e := range s.evaluations {
		c := *e
		c.Children = slices.Clone(e.Children)
		out[id] = c
	}
	return out
}

// Handler serves the stand-in's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TokenPath, s.token)
	mux.HandleFunc("POST "+APIPath, s.api(s.create))
	mux.HandleFunc("GET "+APIPath+"/{id}", s.api(s.get))
	mux.HandleFunc("POST "+APIPath+"/{id}/tag", s.api(s.tag))
	mux.HandleFunc("PUT "+APIPath+"/{id}/lifecycle", s.api(s.lifecycle))
	mux.HandleFunc("DELETE "+APIPath+"/{parent}/child/{id}", s.api(s.detach))
	mux.HandleFunc("DELETE "+APIPath+"/{id}", s.api(s.remove))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %.200s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != s.opts.ClientID || secret != "" {
		writeError(w, http.StatusUnauthorized, "client authentication failed: the client ID in HTTP Basic, with an empty secret")
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		writeError(w, http.StatusBadRequest, "the token request must be form-encoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<14)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "unreadable form")
		return
	}
	if r.PostForm.Get("grant_type") != "password" {
		writeError(w, http.StatusBadRequest, "unsupported_grant_type: only password")
		return
	}
	if r.PostForm.Get("username") != s.opts.Username || r.PostForm.Get("password") != s.opts.Password {
		writeError(w, http.StatusBadRequest, "invalid_grant: bad user credentials")
		return
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	tok := hex.EncodeToString(raw)
	s.mu.Lock()
	now := time.Now()
	for t, exp := range s.tokens {
		if now.After(exp) {
			delete(s.tokens, t)
		}
	}
	if len(s.tokens) >= MaxTokens {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, "too many tokens")
		return
	}
	s.tokens[tok] = now.Add(tokenTTL)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": int(tokenTTL.Seconds())})
}

// api checks the token, records the request and applies a fault, then runs h
// under the lock.
func (s *Server) api(h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "body too large")
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if exp, known := s.tokens[tok]; !ok || !known || time.Now().After(exp) {
			writeError(w, http.StatusUnauthorized, "missing or unknown bearer token")
			return
		}
		if len(s.requests) >= MaxRequests {
			s.requests = slices.Delete(s.requests, 0, len(s.requests)/2)
		}
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Body: string(body)})
		if len(s.faults) > 0 {
			status := s.faults[0]
			s.faults = s.faults[1:]
			writeError(w, status, "injected failure")
			return
		}
		if len(body) > 0 && r.Header.Get("Content-Type") != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
			return
		}
		h(w, r, body)
	}
}

// decodeStrict decodes body into v, refusing unknown fields, trailing data
// and a type mismatch (a numeric threshold).
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

func (s *Server) create(w http.ResponseWriter, _ *http.Request, body []byte) {
	var req avs.CreateRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid evaluation: "+err.Error())
		return
	}
	if msg := invalid(req); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	parent, ok := s.evaluations[req.ParentID]
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("parent evaluation %d does not exist", req.ParentID))
		return
	}
	if len(s.evaluations) >= MaxEvaluations {
		writeError(w, http.StatusInsufficientStorage, "too many evaluations")
		return
	}
	s.nextID++
	ev := &Evaluation{CreateRequest: req, ID: s.nextID, Status: avs.StatusActive}
	s.evaluations[ev.ID] = ev
	parent.Children = append(parent.Children, ev.ID)
	writeJSON(w, http.StatusOK, view(ev))
}

// invalid says what AVS refuses in a creation, "" when nothing.
func invalid(r avs.CreateRequest) string {
	switch {
	case r.DefinitionType != "BASIC":
		return "definition_type must be BASIC"
	case r.Name == "" || utf8.RuneCountInString(r.Name) > 80:
		return "name must have 1 to 80 characters"
	case utf8.RuneCountInString(r.Description) > 255:
		return "description must have at most 255 characters"
	case r.Service == "":
		return "service is required"
	case r.CheckType != "" && r.CheckType != "HTTPSGET":
		return "check_type must be empty or HTTPSGET"
	case r.CheckType == "HTTPSGET" && !strings.HasPrefix(r.URL, "https://"):
		return "an HTTPSGET evaluation needs an https url"
	case r.Interval <= 0 || r.Timeout <= 0:
		return "interval and timeout must be positive"
	case r.TesterAccessID == 0 || r.GroupID == 0 || r.ParentID == 0:
		return "tester_access_id, group_id and parent_id are required"
	case r.Threshold == "":
		return "threshold is required"
	case r.Visibility != "PUBLIC" && r.Visibility != "PRIVATE":
		return "visibility must be PUBLIC or PRIVATE"
	}
	if _, err := strconv.Atoi(r.Threshold); err != nil {
		return "threshold must be a number in a string"
	}
	return ""
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request, key string) (*Evaluation, bool) {
	id, err := strconv.ParseInt(r.PathValue(key), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "an evaluation ID is a number")
		return nil, false
	}
	ev, ok := s.evaluations[id]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("evaluation %d does not exist", id))
		return nil, false
	}
	return ev, true
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, _ []byte) {
	if ev, ok := s.lookup(w, r, "id"); ok {
		writeJSON(w, http.StatusOK, view(ev))
	}
}

func (s *Server) tag(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, ok := s.lookup(w, r, "id")
	if !ok {
		return
	}
	var t avs.Tag
	if err := decodeStrict(body, &t); err != nil {
		writeError(w, http.StatusBadRequest, "invalid tag: "+err.Error())
		return
	}
	ev.Tags = append(ev.Tags, t)
	writeJSON(w, http.StatusOK, view(ev))
}

func (s *Server) lifecycle(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, ok := s.lookup(w, r, "id")
	if !ok {
		return
	}
	var st avs.Status
	if err := decodeStrict(body, &st); err != nil || !st.Valid() {
		writeError(w, http.StatusBadRequest, "the body is one of \"ACTIVE\", \"MAINTENANCE\", \"INACTIVE\", \"RETIRED\", \"DELETED\"")
		return
	}
	ev.Status = st
	writeJSON(w, http.StatusOK, view(ev))
}

func (s *Server) detach(w http.ResponseWriter, r *http.Request, _ []byte) {
	parent, ok := s.lookup(w, r, "parent")
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	i := slices.Index(parent.Children, id)
	if err != nil || i < 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "status": "BAD_REQUEST",
			"message": fmt.Sprintf("Evaluation %d does not contain subevaluation %s", parent.ID, r.PathValue("id"))})
		return
	}
	parent.Children = slices.Delete(parent.Children, i, i+1)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request, _ []byte) {
	ev, ok := s.lookup(w, r, "id")
	if !ok {
		return
	}
	delete(s.evaluations, ev.ID)
	w.WriteHeader(http.StatusOK)
}

// view is an evaluation as AVS answers it: the threshold as a number.
func view(ev *Evaluation) map[string]any {
	threshold, _ := strconv.Atoi(ev.Threshold)
	return map[string]any{"id": ev.ID, "name": ev.Name, "description": ev.Description, "service": ev.Service,
		"url": ev.URL, "check_type": ev.CheckType, "status": ev.Status, "threshold": threshold, "tags": ev.Tags,
		"parent_id": ev.ParentID, "group_id": ev.GroupID, "tester_access_id": ev.TesterAccessID}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"statusCode": status, "status": http.StatusText(status), "message": msg})
}
