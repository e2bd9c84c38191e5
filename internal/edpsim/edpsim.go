// Package edpsim is a stand-in for the Event Data Platform's admin API
// (EDP), for tests and `keb dev`: a client-credentials token endpoint and
// the data tenants and metadata of one namespace, as a plain HTTP server.
// It is as strict as the contract (../shared/reference/integrations.md §6):
// the client is "edp-namespace;<namespace>" with its secret and asks for
// the scopes "edp-namespace.read edp-namespace.update"; API calls need a
// token it issued; a tenant's name must be lower case and its secret
// base64(name+environment); creating what exists answers 409, deleting
// what does not answers 404; creations answer 201, changes and deletions 204.
//
// Routes, relative to where the handler is mounted:
//
//	POST   /oauth2/token
//	POST   /namespaces/<ns>/dataTenants                       {"name","environment","secret"}
//	GET    /namespaces/<ns>/dataTenants/<name>/<env>/metadata
//	POST   /namespaces/<ns>/dataTenants/<name>/<env>/metadata {"key","value"}
//	PUT    /namespaces/<ns>/dataTenants/<name>/<env>/metadata/<key> {"value"}
//	DELETE /namespaces/<ns>/dataTenants/<name>/<env>/metadata/<key>
//	DELETE /namespaces/<ns>/dataTenants/<name>/<env>
package edpsim

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// TokenPath is the token endpoint, relative to the mount point.
const TokenPath = "/oauth2/token"

// Bounds of what it keeps.
const (
	MaxTenants  = 100000
	MaxTokens   = 10000
	MaxRequests = 10000
	tokenTTL    = time.Hour
)

// Request is one API request it served.
type Request struct {
	Method, Path, Body string
}

// Server is the stand-in's state.
type Server struct {
	namespace, secret string

	mu       sync.Mutex
	tenants  map[string]map[string]string // "<name>/<env>" → metadata
	tokens   map[string]time.Time
	faults   []int
	requests []Request
}

// New returns a stand-in of namespace, whose client secret is secret.
func New(namespace, secret string) *Server {
	return &Server{namespace: namespace, secret: secret, tenants: map[string]map[string]string{}, tokens: map[string]time.Time{}}
}

// FailNext makes the next n API requests answer status.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, status)
	}
}

// Requests are the API requests served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Tenants are the data tenants ("<name>/<env>") and their metadata.
func (s *Server) Tenants() map[string]map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]map[string]string{}
	for k, md := range s.tenants {
		c := map[string]string{}
		for mk, mv := range md {
			c[mk] = mv
		}
		out[k] = c
	}
	return out
}

// Handler serves the stand-in's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	base := "/namespaces/{ns}/dataTenants"
	mux.HandleFunc("POST "+TokenPath, s.token)
	mux.HandleFunc("POST "+base, s.api(s.createTenant))
	mux.HandleFunc("DELETE "+base+"/{name}/{env}", s.api(s.deleteTenant))
	mux.HandleFunc("GET "+base+"/{name}/{env}/metadata", s.api(s.listMetadata))
	mux.HandleFunc("POST "+base+"/{name}/{env}/metadata", s.api(s.createMetadata))
	mux.HandleFunc("PUT "+base+"/{name}/{env}/metadata/{key}", s.api(s.updateMetadata))
	mux.HandleFunc("DELETE "+base+"/{name}/{env}/metadata/{key}", s.api(s.deleteMetadata))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %.200s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<14)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "unreadable form")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != "edp-namespace;"+s.namespace || secret != s.secret {
		writeError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		writeError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	if scopes := strings.Fields(r.PostForm.Get("scope")); !slices.Contains(scopes, "edp-namespace.read") ||
		!slices.Contains(scopes, "edp-namespace.update") {
		writeError(w, http.StatusBadRequest, "invalid_scope: edp-namespace.read edp-namespace.update")
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
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": int(tokenTTL.Seconds())})
}

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
		if r.PathValue("ns") != s.namespace {
			writeError(w, http.StatusForbidden, "the token is not for namespace "+r.PathValue("ns"))
			return
		}
		if len(body) > 0 && r.Header.Get("Content-Type") != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
			return
		}
		h(w, r, body)
	}
}

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

func (s *Server) createTenant(w http.ResponseWriter, _ *http.Request, body []byte) {
	var t struct{ Name, Environment, Secret string }
	if err := decodeStrict(body, &t); err != nil || t.Name == "" || t.Environment == "" {
		writeError(w, http.StatusBadRequest, "a data tenant is {\"name\",\"environment\",\"secret\"}")
		return
	}
	if t.Name != strings.ToLower(t.Name) {
		writeError(w, http.StatusBadRequest, "a data tenant's name is lower case")
		return
	}
	if t.Secret != base64.StdEncoding.EncodeToString([]byte(t.Name+t.Environment)) {
		writeError(w, http.StatusBadRequest, "secret must be base64(name+environment)")
		return
	}
	key := t.Name + "/" + t.Environment
	if _, ok := s.tenants[key]; ok {
		writeError(w, http.StatusConflict, "data tenant "+key+" exists")
		return
	}
	if len(s.tenants) >= MaxTenants {
		writeError(w, http.StatusInsufficientStorage, "too many data tenants")
		return
	}
	s.tenants[key] = map[string]string{}
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) tenant(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	md, ok := s.tenants[r.PathValue("name")+"/"+r.PathValue("env")]
	if !ok {
		writeError(w, http.StatusNotFound, "no data tenant "+r.PathValue("name")+"/"+r.PathValue("env"))
	}
	return md, ok
}

func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request, _ []byte) {
	if _, ok := s.tenant(w, r); ok {
		delete(s.tenants, r.PathValue("name")+"/"+r.PathValue("env"))
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) listMetadata(w http.ResponseWriter, r *http.Request, _ []byte) {
	md, ok := s.tenant(w, r)
	if !ok {
		return
	}
	type tenantRef struct {
		Namespace   struct{ Name string } `json:"namespace"`
		Name        string                `json:"name"`
		Environment string                `json:"environment"`
	}
	var out []map[string]any
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ref := tenantRef{Name: r.PathValue("name"), Environment: r.PathValue("env")}
		ref.Namespace.Name = s.namespace
		out = append(out, map[string]any{"dataTenant": ref, "key": k, "value": md[k]})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) createMetadata(w http.ResponseWriter, r *http.Request, body []byte) {
	md, ok := s.tenant(w, r)
	if !ok {
		return
	}
	var item struct{ Key, Value string }
	if err := decodeStrict(body, &item); err != nil || item.Key == "" {
		writeError(w, http.StatusBadRequest, "a metadata entry is {\"key\",\"value\"}")
		return
	}
	if _, ok := md[item.Key]; ok {
		writeError(w, http.StatusConflict, "metadata "+item.Key+" exists")
		return
	}
	md[item.Key] = item.Value
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) updateMetadata(w http.ResponseWriter, r *http.Request, body []byte) {
	md, ok := s.tenant(w, r)
	if !ok {
		return
	}
	var v struct{ Value string }
	if err := decodeStrict(body, &v); err != nil {
		writeError(w, http.StatusBadRequest, "a metadata change is {\"value\"}")
		return
	}
	if _, ok := md[r.PathValue("key")]; !ok {
		writeError(w, http.StatusNotFound, "no metadata "+r.PathValue("key"))
		return
	}
	md[r.PathValue("key")] = v.Value
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) deleteMetadata(w http.ResponseWriter, r *http.Request, _ []byte) {
	md, ok := s.tenant(w, r)
	if !ok {
		return
	}
	if _, ok := md[r.PathValue("key")]; !ok {
		writeError(w, http.StatusNotFound, "no metadata "+r.PathValue("key"))
		return
	}
	delete(md, r.PathValue("key"))
	w.WriteHeader(http.StatusNoContent)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "message": msg})
}
