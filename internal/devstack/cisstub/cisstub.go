// Package cisstub is a stand-in for the CIS events API, for tests and `keb
// dev`: an OAuth2 client-credentials token endpoint and the SUBACCOUNT_DELETE
// events of both API versions, paged, from a list anyone can append to with
// POST /events. Tests can make it fail the next requests (a status or a
// stall) and revoke its tokens.
//
// Routes, relative to where the handler is mounted:
//
//	POST /oauth/token   client credentials (basic auth or form) → {"access_token",...}
//	GET  /v1.0/events   events in API v1.0's shape (pageNum from 0)
//	GET  /v2.0/events   events in API v2.0's shape (pageNum from 1)
//	POST /events        {"type":"SUBACCOUNT_DELETE","subaccount_id":"<id>"} → 201 with the event
package cisstub

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kyma-keb/keb/internal/cis"
)

// Paths of the stand-in's endpoints, relative to its mount point.
const (
	TokenPath    = "/oauth/token"
	EventsV1Path = "/v1.0/events"
	EventsV2Path = "/v2.0/events"
	AddPath      = "/events"
)

// Server is the stand-in's state.
type Server struct {
	clientID, clientSecret string

	mu       sync.Mutex
	events   []cis.Event
	nextID   int64
	tokens   map[string]bool
	faults   []fault
	requests int
	now      func() time.Time
}

// fault is how the next request of the events endpoint fails.
type fault struct {
	status int           // answer with this status
	stall  time.Duration // or sleep this long first
}

// New returns a stand-in accepting the client ID and secret.
func New(clientID, clientSecret string) *Server {
	return &Server{clientID: clientID, clientSecret: clientSecret, tokens: map[string]bool{}, now: time.Now}
}

// Add appends a SUBACCOUNT_DELETE event of the subaccount, acted now (never
// before the last event, so the list stays in action-time order).
func (s *Server) Add(subaccountID string) cis.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.now().UTC().Truncate(time.Millisecond)
	if n := len(s.events); n > 0 && at.Before(s.events[n-1].ActionTime) {
		at = s.events[n-1].ActionTime
	}
	return s.addLocked(subaccountID, at)
}

// AddAt appends an event acted at the given time; callers keep the order.
func (s *Server) AddAt(subaccountID string, at time.Time) cis.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(subaccountID, at.UTC().Truncate(time.Millisecond))
}

func (s *Server) addLocked(subaccountID string, at time.Time) cis.Event {
	s.nextID++
	ev := cis.Event{ID: strconv.FormatInt(s.nextID, 10), SubaccountID: subaccountID, ActionTime: at}
	s.events = append(s.events, ev)
	return ev
}

// FailNext makes the next n event requests answer status.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, fault{status: status})
	}
}

// StallNext makes the next n event requests wait d before answering, to
// provoke the client's timeout.
func (s *Server) StallNext(n int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, fault{stall: d})
	}
}

// RevokeTokens forgets every token handed out: the next event request
// answers 401.
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]bool{}
}

// Requests is how many event requests reached the stand-in.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Handler serves the stand-in's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TokenPath, s.token)
	mux.HandleFunc("GET "+EventsV1Path, func(w http.ResponseWriter, r *http.Request) { s.list(w, r, cis.V1) })
	mux.HandleFunc("GET "+EventsV2Path, func(w http.ResponseWriter, r *http.Request) { s.list(w, r, cis.V2) })
	mux.HandleFunc("POST "+AddPath, s.add)
	return mux
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if r.PostFormValue("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	if id != s.clientID || secret != s.clientSecret {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[tok] = true
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": 3600})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, v cis.Version) {
	s.mu.Lock()
	s.requests++
	var f *fault
	if len(s.faults) > 0 {
		f = &s.faults[0]
		s.faults = s.faults[1:]
	}
	authorized := false
	if h := r.Header.Get("Authorization"); len(h) > 7 {
		authorized = s.tokens[h[7:]]
	}
	s.mu.Unlock()
	if f != nil && f.stall > 0 {
		select {
		case <-time.After(f.stall):
		case <-r.Context().Done():
			return
		}
	} else if f != nil {
		if f.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		writeJSON(w, f.status, map[string]string{"error": http.StatusText(f.status)})
		return
	}
	if !authorized {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	q := r.URL.Query()
	if q.Get("eventType") != cis.EventTypeSubaccountDelete {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "eventType must be " + cis.EventTypeSubaccountDelete})
		return
	}
	size, err := strconv.Atoi(q.Get("pageSize"))
	if err != nil || size <= 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad pageSize"})
		return
	}
	num, err := strconv.Atoi(q.Get("pageNum"))
	first := 1
	if v == cis.V1 {
		first = 0
	}
	if err != nil || num < first {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad pageNum"})
		return
	}
	var from time.Time
	if f := q.Get("fromActionTime"); f != "" {
		ms, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad fromActionTime"})
			return
		}
		from = time.UnixMilli(ms)
	}
	s.mu.Lock()
	var match []cis.Event
	for _, e := range s.events {
		if !e.ActionTime.Before(from) {
			match = append(match, e)
		}
	}
	s.mu.Unlock()
	pages := (len(match) + size - 1) / size
	lo := min((num-first)*size, len(match))
	hi := min(lo+size, len(match))
	page := match[lo:hi]
	if v == cis.V1 {
		out := cis.WirePage[cis.WireEventV1]{Total: len(match), TotalPages: pages, PageNum: num, Events: []cis.WireEventV1{}}
		for _, e := range page {
			id, _ := strconv.ParseInt(e.ID, 10, 64)
			out.Events = append(out.Events, cis.WireEventV1{ID: id, ActionTime: e.ActionTime.UnixMilli(),
				Type: cis.EventTypeSubaccountDelete, SubaccountGUID: e.SubaccountID})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	more := num-first+1 < pages
	out := cis.WirePage[cis.WireEventV2]{Total: len(match), TotalPages: pages, PageNum: num, MorePages: &more, Events: []cis.WireEventV2{}}
	for _, e := range page {
		out.Events = append(out.Events, cis.WireEventV2{ID: e.ID, ActionTime: e.ActionTime.UnixMilli(),
			CreationTime: e.ActionTime.UnixMilli(), EventType: cis.EventTypeSubaccountDelete, EntityType: "Subaccount",
			EntityID: e.SubaccountID})
	}
	writeJSON(w, http.StatusOK, out)
}

// AddRequest is the body of POST /events.
type AddRequest struct {
	Type         string `json:"type"`
	SubaccountID string `json:"subaccount_id"`
}

func (s *Server) add(w http.ResponseWriter, r *http.Request) {
	var req AddRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "BadRequest", "description": "body: " + err.Error()})
		return
	}
	if req.Type != cis.EventTypeSubaccountDelete {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "BadRequest",
			"description": "type must be " + cis.EventTypeSubaccountDelete})
		return
	}
	if req.SubaccountID == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "BadRequest", "description": "subaccount_id is required"})
		return
	}
	ev := s.Add(req.SubaccountID)
	writeJSON(w, http.StatusCreated, map[string]any{"id": ev.ID, "type": cis.EventTypeSubaccountDelete,
		"subaccount_id": ev.SubaccountID, "actionTime": ev.ActionTime.UnixMilli()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
