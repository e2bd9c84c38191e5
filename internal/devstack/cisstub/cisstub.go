// Package cisstub is a stand-in for the CIS events API, for tests and `keb
// dev`: an OAuth2 client-credentials token endpoint and the SUBACCOUNT_DELETE
// events of both API versions, paged, from a list appended to with
// POST /events. Tests can make it fail the next requests (a status or a
// stall) and revoke its tokens.
//
// Routes, relative to where the handler is mounted:
//
//	POST /oauth/token   client credentials (basic auth or form) → {"access_token",...}
//	GET  /v1.0/events   events in API v1.0's shape (pageNum from 0)
//	GET  /v2.0/events   events in API v2.0's shape (pageNum from 1)
//	GET  /events/v2/events/central  the central events API v2: the first page
//	                    by filter (eventType, entityType, since=<n>D,
//	                    pageSize, sortField=creationTime, sortOrder=ASC), the
//	                    next ones by ?cursor=<nextCursor> alone
//	POST /events        {"type":"SUBACCOUNT_DELETE","subaccount_id":"<id>"} → 201 with the event
//	GET  /entitlements/v1/services/kymaruntime/plans/<plan>/subaccounts/<id>/entitlements → {"amount"}
//	                    (404 for a subaccount without entitlements)
//	POST /entitlements  {"subaccount_id","plan","amount"} sets one (guarded as POST /events)
//
// An event makes the subaccount cleanup deprovision runtimes, so whoever
// mounts the stand-in guards POST /events as keb guards a DELETE (Handler's
// guardAdd). What it keeps is bounded: at most MaxEvents events (the oldest
// go first; the cleanup job reads from its watermark on) and MaxTokens
// tokens, each for an hour; every error answer is {"error", "description"}.
package cisstub

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/strictjson"
)

// Paths of the stand-in's endpoints, relative to its mount point.
const (
	TokenPath    = "/oauth/token"
	EventsV1Path = "/v1.0/events"
	EventsV2Path = "/v2.0/events"
	// CentralEventsPath is the central events API v2.
	CentralEventsPath = "/events/v2/events/central"
	AddPath           = "/events"
)

// Bounds of what the stand-in keeps.
const (
	// MaxEvents is how many events it keeps; adding one more drops the
	// oldest.
	MaxEvents = 10000
	// MaxTokens is how many unexpired tokens it keeps; a token request
	// beyond them is refused (429) until one expires.
	MaxTokens = 1000
	// maxSubaccountID bounds a subaccount ID (CIS sends GUIDs).
	maxSubaccountID = 128
	tokenTTL        = time.Hour
)

// Server is the stand-in's state.
type Server struct {
	clientID, clientSecret string

	mu     sync.Mutex
	events []cis.Event
	nextID int64
	// tokens maps each token handed out to when it expires.
	tokens   map[string]time.Time
	faults   []fault
	requests int
	// changes are Subaccount_Creation and Subaccount_Update events, in
	// creation order.
	changes []cis.WireCentralEvent
	// entitlements are the subaccounts' amounts by plan.
	entitlements map[entitlementKey]int
	now          func() time.Time
}

// fault is how the next request of the events endpoint fails.
type fault struct {
	status int           // answer with this status
	stall  time.Duration // or sleep this long first
}

// New returns a stand-in accepting the client ID and secret.
func New(clientID, clientSecret string) *Server {
	return &Server{clientID: clientID, clientSecret: clientSecret, tokens: map[string]time.Time{}, now: time.Now}
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
	if len(s.events) >= MaxEvents {
		// A new array now and then, so that the dropped events' memory goes.
		s.events = append(make([]cis.Event, 0, MaxEvents), s.events[len(s.events)-MaxEvents+1:]...)
	}
	s.events = append(s.events, ev)
	return ev
}

// Events is how many events the stand-in keeps.
func (s *Server) Events() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
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
	s.tokens = map[string]time.Time{}
}

// Requests is how many event requests reached the stand-in.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Handler serves the stand-in's routes; guardAdd wraps POST /events (keb
// dev demands a token with scope broker:write), nil leaves it open (tests).
func (s *Server) Handler(guardAdd func(http.Handler) http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TokenPath, s.token)
	mux.HandleFunc("GET "+EventsV1Path, func(w http.ResponseWriter, r *http.Request) { s.list(w, r, cis.V1) })
	mux.HandleFunc("GET "+EventsV2Path, func(w http.ResponseWriter, r *http.Request) { s.list(w, r, cis.V2) })
	mux.HandleFunc("GET "+CentralEventsPath, s.central)
	mux.HandleFunc("GET "+EntitlementsPattern, s.entitlement)
	var add http.Handler = http.HandlerFunc(s.add)
	if guardAdd != nil {
		add = guardAdd(add)
	}
	mux.Handle("POST "+AddPath, add)
	var set http.Handler = http.HandlerFunc(s.setEntitlement)
	if guardAdd != nil {
		set = guardAdd(set)
	}
	mux.Handle("POST "+SetEntitlementPath, set)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("the CIS stand-in has no route %s %.200s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	if r.PostFormValue("grant_type") != "client_credentials" {
		writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	if id != s.clientID || secret != s.clientSecret {
		writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	tok, err := s.issue()
	if err != nil {
		writeOAuthError(w, http.StatusTooManyRequests, "temporarily_unavailable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": int(tokenTTL / time.Second)})
}

// issue hands out a token for an hour, forgetting expired ones; it refuses
// while MaxTokens unexpired ones are out.
func (s *Server) issue() (string, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for t, until := range s.tokens {
		if !until.After(now) {
			delete(s.tokens, t)
		}
	}
	if len(s.tokens) >= MaxTokens {
		return "", fmt.Errorf("the stand-in holds %d unexpired tokens; use one of them", MaxTokens)
	}
	s.tokens[tok] = now.Add(tokenTTL)
	return tok, nil
}

// admit counts an events request, plays the next fault, and checks its
// token; false means it answered.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	s.requests++
	var f *fault
	if len(s.faults) > 0 {
		f = &s.faults[0]
		s.faults = s.faults[1:]
	}
	authorized := false
	if h := r.Header.Get("Authorization"); len(h) > 7 {
		until, ok := s.tokens[h[7:]]
		authorized = ok && until.After(s.now())
	}
	s.mu.Unlock()
	if f != nil && f.stall > 0 {
		select {
		case <-time.After(f.stall):
		case <-r.Context().Done():
			return false
		}
	} else if f != nil {
		if f.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		writeError(w, f.status, http.StatusText(f.status), "a fault the test asked for")
		return false
	}
	if !authorized {
		writeError(w, http.StatusUnauthorized, "invalid_token", "no token of the stand-in's token endpoint, or an expired one")
		return false
	}
	return true
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, v cis.Version) {
	if !s.admit(w, r) {
		return
	}
	q := r.URL.Query()
	if q.Get("eventType") != cis.EventTypeSubaccountDelete {
		writeError(w, http.StatusBadRequest, "BadRequest", "eventType must be "+cis.EventTypeSubaccountDelete)
		return
	}
	size, err := strconv.Atoi(q.Get("pageSize"))
	if err != nil || size <= 0 || size > 1000 {
		writeError(w, http.StatusBadRequest, "BadRequest", "pageSize must be 1 to 1000")
		return
	}
	num, err := strconv.Atoi(q.Get("pageNum"))
	first := 1
	if v == cis.V1 {
		first = 0
	}
	if err != nil || num < first || num > 1_000_000 {
		writeError(w, http.StatusBadRequest, "BadRequest", fmt.Sprintf("pageNum must be %d to 1000000", first))
		return
	}
	var from time.Time
	if f := q.Get("fromActionTime"); f != "" {
		ms, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", "fromActionTime must be milliseconds since 1970")
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

var addRequest = reflect.TypeFor[AddRequest]()

// maxAddBody bounds POST /events' body: an event is a hundred bytes.
const maxAddBody = 4 << 10

// decodeBody reads a small JSON body into v strictly (no unknown fields,
// no nulls, nothing after it); false means it answered the problem.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, typ reflect.Type) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAddBody))
	if err != nil {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, "PayloadTooLarge", fmt.Sprintf("the body is larger than %d bytes", maxAddBody))
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", "body: "+err.Error())
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "BadRequest", "body: data after the JSON object")
		return false
	}
	if p := strictjson.Check(body, strictjson.Rules{Type: typ, NoNulls: true}); p != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", "body: "+p.Error())
		return false
	}
	return true
}

func (s *Server) add(w http.ResponseWriter, r *http.Request) {
	var req AddRequest
	if !decodeBody(w, r, &req, addRequest) {
		return
	}
	if req.Type != cis.EventTypeSubaccountDelete {
		writeError(w, http.StatusBadRequest, "BadRequest", "type must be "+cis.EventTypeSubaccountDelete)
		return
	}
	if err := checkSubaccountID(req.SubaccountID); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	ev := s.Add(req.SubaccountID)
	writeJSON(w, http.StatusCreated, map[string]any{"id": ev.ID, "type": cis.EventTypeSubaccountDelete,
		"subaccount_id": ev.SubaccountID, "actionTime": ev.ActionTime.UnixMilli()})
}

// checkSubaccountID refuses what no CIS event carries.
func checkSubaccountID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("subaccount_id is required")
	case len(id) > maxSubaccountID:
		return fmt.Errorf("subaccount_id is %d bytes long; at most %d", len(id), maxSubaccountID)
	case !utf8.ValidString(id):
		return fmt.Errorf("subaccount_id is not UTF-8")
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return fmt.Errorf("subaccount_id holds a control character")
		}
	}
	return nil
}

func writeError(w http.ResponseWriter, status int, key, description string) {
	writeJSON(w, status, map[string]string{"error": key, "description": description})
}

// writeOAuthError is RFC 6749's error shape, as CIS's token endpoint answers.
func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
