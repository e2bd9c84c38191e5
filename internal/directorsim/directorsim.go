// Package directorsim is a stand-in for Compass's Director, for tests and
// `keb dev`: a client-credentials token endpoint and the one GraphQL query
// keb sends (a runtime's console URL label and status), as a plain HTTP
// server. As strict as the contract (../shared/reference/integrations.md
// §8): the token needs the client's ID and secret, the query a token it
// issued and the `tenant` header, and a runtime is answered only in its
// own tenant (null elsewhere, as the Director does for what a tenant
// cannot see). Which runtimes exist, in which tenant and with which
// console URL, is what Lookup says: in the landscape the Provisioner
// registered them, in `keb dev` the control plane's Runtime CRs do.
//
// Routes, relative to where the handler is mounted:
//
//	POST /oauth/token  client credentials
//	POST /graphql      {"query":"query { result: runtime(id: \"<id>\") {...} }"}
package directorsim

import (
	"context"
	"net/http"
	"regexp"
	"strings"

	"github.com/kyma-keb/keb/internal/standin"
)

// Paths, relative to the mount point.
const (
	TokenPath   = "/oauth/token"
	GraphQLPath = "/graphql"
)

// Runtime is a runtime as the Director knows it.
type Runtime struct {
	// Tenant is the global account it is registered in.
	Tenant string
	// ConsoleURL is its runtime_consoleUrl label ("": none yet).
	ConsoleURL string
	// Condition is its status (READY, FAILED, ...; "": no status yet).
	Condition string
}

// Lookup finds a registered runtime.
type Lookup func(ctx context.Context, runtimeID string) (Runtime, bool)

// Server is the stand-in's state.
type Server struct {
	*standin.Core
	clientID, clientSecret string
	lookup                 Lookup
}

// New returns a stand-in accepting the client, answering from lookup.
func New(clientID, clientSecret string, lookup Lookup) *Server {
	return &Server{Core: standin.NewCore(), clientID: clientID, clientSecret: clientSecret, lookup: lookup}
}

// Handler serves the stand-in's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+TokenPath, s.token)
	mux.HandleFunc("POST "+GraphQLPath, s.API(writeError, s.query))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := standin.ClientCredentials(w, r)
	if !ok {
		writeError(w, http.StatusBadRequest, "a client-credentials grant with the client in HTTP Basic or the form")
		return
	}
	if id != s.clientID || secret != s.clientSecret {
		writeError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	tok, ok := s.IssueToken()
	if !ok {
		writeError(w, http.StatusTooManyRequests, "too many tokens")
		return
	}
	standin.WriteToken(w, tok)
}

// runtimeQuery is the one query the stand-in answers.
var runtimeQuery = regexp.MustCompile(`^query \{ result: runtime\(id: "([^"\\]+)"\) \{ id labels\(key: "runtime_consoleUrl"\) status \{ condition \} \} \}$`)

func (s *Server) query(w http.ResponseWriter, r *http.Request, body []byte) {
	var q struct {
		Query string `json:"query"`
	}
	if err := standin.DecodeStrict(body, &q); err != nil {
		graphQLError(w, "the body is {\"query\": <GraphQL text>}")
		return
	}
	tenant := strings.TrimSpace(r.Header.Get("tenant"))
	if tenant == "" {
		graphQLError(w, "the tenant header is required")
		return
	}
	m := runtimeQuery.FindStringSubmatch(q.Query)
	if m == nil {
		graphQLError(w, "the stand-in answers only keb's runtime console URL query")
		return
	}
	rt, found := s.lookup(r.Context(), m[1])
	if !found || rt.Tenant != tenant {
		standin.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"result": nil}})
		return
	}
	result := map[string]any{"id": m[1], "labels": map[string]any{}}
	if rt.ConsoleURL != "" {
		result["labels"] = map[string]any{"runtime_consoleUrl": rt.ConsoleURL}
	}
	if rt.Condition != "" {
		result["status"] = map[string]any{"condition": rt.Condition}
	} else {
		result["status"] = nil
	}
	standin.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"result": result}})
}

// graphQLError answers as GraphQL servers do: 200 with errors.
func graphQLError(w http.ResponseWriter, msg string) {
	standin.WriteJSON(w, http.StatusOK, map[string]any{"data": nil, "errors": []map[string]any{{"message": msg}}})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	standin.WriteJSON(w, status, map[string]any{"error": http.StatusText(status), "error_description": msg})
}
