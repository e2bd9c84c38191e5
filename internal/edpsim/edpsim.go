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
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/kyma-keb/keb/internal/standin"
)

// TokenPath is the token endpoint, relative to the mount point.
const TokenPath = "/oauth2/token"

// MaxTenants bounds what it keeps (tokens and requests: standin).
const MaxTenants = 100000

// Server is the stand-in's state; the core's lock guards it.
type Server struct {
	*standin.Core
	namespace, secret string

	tenants map[string]map[string]string // "<name>/<env>" → metadata
}

// New returns a stand-in of namespace, whose client secret is secret.
func New(namespace, secret string) *Server {
	return &Server{Core: standin.NewCore(), namespace: namespace, secret: secret, tenants: map[string]map[string]string{}}
}

// Tenants are the data tenants ("<name>/<env>") and their metadata.
func (s *Server) Tenants() map[string]map[string]string {
	s.Lock()
	defer s.Unlock()
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
	id, secret, ok := standin.ClientCredentials(w, r)
	if !ok {
		writeError(w, http.StatusBadRequest, "a client-credentials grant with the client in HTTP Basic or the form")
		return
	}
	if id != "edp-namespace;"+s.namespace || secret != s.secret {
		writeError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if scopes := strings.Fields(r.PostForm.Get("scope")); !slices.Contains(scopes, "edp-namespace.read") ||
		!slices.Contains(scopes, "edp-namespace.update") {
		writeError(w, http.StatusBadRequest, "invalid_scope: edp-namespace.read edp-namespace.update")
		return
	}
	tok, ok := s.IssueToken()
	if !ok {
		writeError(w, http.StatusTooManyRequests, "too many tokens")
		return
	}
	standin.WriteToken(w, tok)
}

// api is standin's API wrapper that also holds a token to its namespace.
func (s *Server) api(h func(w http.ResponseWriter, r *http.Request, body []byte)) http.HandlerFunc {
	return s.API(writeError, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.PathValue("ns") != s.namespace {
			writeError(w, http.StatusForbidden, "the token is not for namespace "+r.PathValue("ns"))
			return
		}
		h(w, r, body)
	})
}

func (s *Server) createTenant(w http.ResponseWriter, _ *http.Request, body []byte) {
	var t struct{ Name, Environment, Secret string }
	if err := standin.DecodeStrict(body, &t); err != nil || t.Name == "" || t.Environment == "" {
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
	standin.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) createMetadata(w http.ResponseWriter, r *http.Request, body []byte) {
	md, ok := s.tenant(w, r)
	if !ok {
		return
	}
	var item struct{ Key, Value string }
	if err := standin.DecodeStrict(body, &item); err != nil || item.Key == "" {
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
	if err := standin.DecodeStrict(body, &v); err != nil {
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
	standin.WriteJSON(w, status, map[string]any{"status": status, "message": msg})
}
