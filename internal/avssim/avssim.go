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
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/standin"
)

// Paths of the stand-in, relative to its mount point.
const (
	TokenPath = "/oauth/token"
	APIPath   = "/api/v2/evaluationmetadata"
)

// MaxEvaluations bounds what it keeps (tokens and requests: standin).
const MaxEvaluations = 100000

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

// Server is the stand-in's state; the core's lock guards it.
type Server struct {
	*standin.Core
	opts Options

	evaluations map[int64]*Evaluation
	nextID      int64
}

// New returns a stand-in with opts.
func New(opts Options) *Server {
	s := &Server{Core: standin.NewCore(), opts: opts, evaluations: map[int64]*Evaluation{}, nextID: 1000}
	for _, p := range opts.Parents {
		s.evaluations[p] = &Evaluation{ID: p, Status: avs.StatusActive,
			CreateRequest: avs.CreateRequest{Name: "parent-" + strconv.FormatInt(p, 10), DefinitionType: "BASIC"}}
	}
	return s
}

// Evaluations are the evaluations that exist, parents included.
func (s *Server) Evaluations() map[int64]Evaluation {
	s.Lock()
	defer s.Unlock()
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
	mux.HandleFunc("POST "+APIPath, s.API(writeError, s.create))
	mux.HandleFunc("GET "+APIPath+"/{id}", s.API(writeError, s.get))
	mux.HandleFunc("POST "+APIPath+"/{id}/tag", s.API(writeError, s.tag))
	mux.HandleFunc("PUT "+APIPath+"/{id}/lifecycle", s.API(writeError, s.lifecycle))
	mux.HandleFunc("DELETE "+APIPath+"/{parent}/child/{id}", s.API(writeError, s.detach))
	mux.HandleFunc("DELETE "+APIPath+"/{id}", s.API(writeError, s.remove))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %.200s", r.Method, r.URL.Path))
	})
	return mux
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	// HTTP Basic carries both form-encoded (RFC 6749 2.3.1).
	id, secret, ok := r.BasicAuth()
	id, err1 := url.QueryUnescape(id)
	if !ok || err1 != nil || id != s.opts.ClientID || secret != "" {
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
	tok, ok := s.IssueToken()
	if !ok {
		writeError(w, http.StatusTooManyRequests, "too many tokens")
		return
	}
	standin.WriteToken(w, tok)
}

func (s *Server) create(w http.ResponseWriter, _ *http.Request, body []byte) {
	var req avs.CreateRequest
	if err := standin.DecodeStrict(body, &req); err != nil {
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
	standin.WriteJSON(w, http.StatusOK, view(ev))
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
		standin.WriteJSON(w, http.StatusOK, view(ev))
	}
}

func (s *Server) tag(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, ok := s.lookup(w, r, "id")
	if !ok {
		return
	}
	var t avs.Tag
	if err := standin.DecodeStrict(body, &t); err != nil {
		writeError(w, http.StatusBadRequest, "invalid tag: "+err.Error())
		return
	}
	ev.Tags = append(ev.Tags, t)
	standin.WriteJSON(w, http.StatusOK, view(ev))
}

func (s *Server) lifecycle(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, ok := s.lookup(w, r, "id")
	if !ok {
		return
	}
	var st avs.Status
	if err := standin.DecodeStrict(body, &st); err != nil || !st.Valid() {
		writeError(w, http.StatusBadRequest, "the body is one of \"ACTIVE\", \"MAINTENANCE\", \"INACTIVE\", \"RETIRED\", \"DELETED\"")
		return
	}
	ev.Status = st
	standin.WriteJSON(w, http.StatusOK, view(ev))
}

func (s *Server) detach(w http.ResponseWriter, r *http.Request, _ []byte) {
	parent, ok := s.lookup(w, r, "parent")
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	i := slices.Index(parent.Children, id)
	if err != nil || i < 0 {
		standin.WriteJSON(w, http.StatusBadRequest, map[string]any{"statusCode": 400, "status": "BAD_REQUEST",
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

func writeError(w http.ResponseWriter, status int, msg string) {
	standin.WriteJSON(w, status, map[string]any{"statusCode": status, "status": http.StatusText(status), "message": msg})
}
