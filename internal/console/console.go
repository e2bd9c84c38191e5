// Package console is the operations console at /console: a runtimes table
// with /info/runtimes' filters and paging, and an instance page with the
// timeline of its operations (each step's start, end, failures, the current
// waiting reason), refreshed live while an operation runs. Pages are
// server-rendered Go templates with a few lines of plain JavaScript, embedded
// in the binary: nothing to build, nothing to download.
//
// It reads through the same handler that serves GET /info/runtimes (so
// filters, paging and their errors are exactly the API's) and needs a token
// with scope cld:read, kept in an HttpOnly cookie after the login page.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/events"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/logging"
	"github.com/kyma-keb/keb/internal/runtimelisting"
	"github.com/kyma-keb/keb/internal/storage"
)

//go:embed templates/*.html
var templateFS embed.FS

// cookieName holds the console's bearer token.
const cookieName = "keb_console_token"

// Verifier checks a bearer token (auth.Verifier).
type Verifier interface {
	Verify(ctx context.Context, rawToken string) (*auth.Claims, error)
}

// EventLister lists events as GET /events does (*events.Service): the
// timeline is built from them.
type EventLister interface {
	List(ctx context.Context, f events.Filter) ([]events.Event, error)
}

// InstanceReader reads a live instance, with what the control-plane watch
// last saw of its Kyma CR (storage.Store).
type InstanceReader interface {
	Instance(ctx context.Context, instanceID string) (storage.Instance, error)
	ArchivedOperations(ctx context.Context, instanceID string) (storage.ArchivedHistory, error)
}

// Options are what the console reads through.
type Options struct {
	// Runtimes is the GET /info/runtimes handler (without its auth: the
	// console checks the token itself).
	Runtimes  http.Handler
	Events    EventLister
	Instances InstanceReader
	Verifier  Verifier
	// Overview reads the overview page's figures (storage.Store).
	Overview OverviewReader
	// Orchestrations is the orchestration API's handlers (without their
	// auth); Progress counts their runtimes by state (storage.Orchestrations).
	Orchestrations OrchestrationAPI
	Progress       ProgressCounter
	// EventsAPI is the GET /events handler (without its auth).
	EventsAPI http.Handler
	// Pool lists the account pool and AccountUsage counts the live
	// instances on its accounts; Pool is nil without a control plane.
	Pool         PoolLister
	AccountUsage AccountUsage
	// Steps are each operation type's steps in pipeline order: the
	// timeline draws those not started yet as steps to come. Empty on a
	// replica without workers.
	Steps map[string][]string
	// StuckAfter is how long an operation runs before the runtimes list
	// calls it stuck.
	StuckAfter time.Duration
	// DevLogin says how to get a token in `keb dev`, shown on the login page.
	DevLogin bool
	Log      logrus.FieldLogger
}

// Console serves the pages.
type Console struct {
	opts Options
	tmpl *template.Template
	// crossOrigin refuses form posts a browser sends from another site: a
	// page elsewhere must not log a visitor in with its own token (login
	// CSRF) nor out.
	crossOrigin *http.CrossOriginProtection
	cache       overviewCache
}

// New parses the templates.
func New(opts Options) *Console {
	funcs := template.FuncMap{
		"ago": func(t time.Time) string { return ago(time.Now(), t) },
		// Times carry their zone: an operator in another one must not
		// read UTC as local time.
		"when":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
		"join":     strings.Join,
		"short":    short,
		"since":    since,
		"seconds":  seconds,
		"sinceNow": time.Since,
		"name":     runtimeName,
		"used": func(s hyperscaler.Summary) string {
			return fmt.Sprintf("%.1f", percent(s.Total-s.Free, s.Total))
		},
	}
	c := &Console{opts: opts, tmpl: template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")),
		crossOrigin: http.NewCrossOriginProtection()}
	c.crossOrigin.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.render(w, http.StatusForbidden, "login.html", map[string]any{"Dev": c.opts.DevLogin, "Next": "/console",
			"Error": "This form was sent from another site; log in from this page instead."})
	}))
	return c
}

// Register adds the console's routes to r. The bodies of its form posts
// are read through readForm (the router's bounds for bodies sent before
// anyone is authenticated).
func (c *Console) Register(r *mux.Router, readForm func(http.Handler) http.Handler) {
	r.HandleFunc("/console", c.authed(c.overviewPage)).Methods(http.MethodGet)
	r.HandleFunc("/console/runtimes", c.authed(c.runtimesPage)).Methods(http.MethodGet)
	r.HandleFunc("/console/orchestrations", c.authed(c.orchestrationsPage)).Methods(http.MethodGet)
	r.HandleFunc("/console/orchestrations/{orchestration_id}", c.authed(c.orchestrationPage)).Methods(http.MethodGet)
	r.HandleFunc("/console/pool", c.authed(c.poolPage)).Methods(http.MethodGet)
	r.HandleFunc("/console/events", c.authed(c.eventsPage)).Methods(http.MethodGet)
	r.HandleFunc("/console/instances/{instance_id}", c.authed(c.instancePage)).Methods(http.MethodGet)
	r.HandleFunc("/console/login", c.loginPage).Methods(http.MethodGet)
	r.Handle("/console/login", c.crossOrigin.Handler(readForm(http.HandlerFunc(c.login)))).Methods(http.MethodPost)
	r.Handle("/console/logout", c.crossOrigin.Handler(http.HandlerFunc(c.logout))).Methods(http.MethodPost)
}

// authed lets requests with a cld:read token cookie through; others go to
// the login page.
func (c *Console) authed(next func(w http.ResponseWriter, r *http.Request, token string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(cookieName)
		if err == nil {
			claims, verr := c.opts.Verifier.Verify(r.Context(), ck.Value)
			if verr == nil && claims.HasScope(auth.ScopeCLDRead) {
				next(w, r, ck.Value)
				return
			}
		}
		http.Redirect(w, r, "/console/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	}
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, http.StatusOK, "login.html", map[string]any{"Dev": c.opts.DevLogin, "Next": safeNext(r.URL.Query().Get("next"))})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body) // bounded by the router
	if err != nil {
		c.render(w, http.StatusBadRequest, "login.html", map[string]any{"Dev": c.opts.DevLogin, "Next": "/console",
			"Error": "The form could not be read."})
		return
	}
	form, err := ParseLoginForm(r.Header.Get("Content-Type"), body)
	if err != nil {
		c.render(w, http.StatusBadRequest, "login.html", map[string]any{"Dev": c.opts.DevLogin, "Next": "/console",
			"Error": "The form was refused: " + err.Error()})
		return
	}
	token, next := form.Token, form.Next
	claims, err := c.opts.Verifier.Verify(r.Context(), token)
	msg := ""
	switch {
	case err != nil:
		msg = "The token was refused: " + err.Error()
	case !claims.HasScope(auth.ScopeCLDRead):
		msg = "The token lacks scope " + auth.ScopeCLDRead + "."
	}
	if msg != "" {
		c.render(w, http.StatusUnauthorized, "login.html", map[string]any{"Dev": c.opts.DevLogin, "Next": next, "Error": msg})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/console", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/console", MaxAge: -1, HttpOnly: true})
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// safeNext keeps redirects inside the console: a path of this server
// under /console, nothing a browser could read as another host or resolve
// to a path outside /console. The path before any query is unescaped once
// (a browser reads %2e%2e as ..) and must then be clean: no dot segments,
// no empty segments, no further escapes (%252e), no backslash, no control
// character. Anything else goes to /console.
func safeNext(next string) string {
	p, _, _ := strings.Cut(next, "?")
	unescaped, err := url.PathUnescape(p)
	if err != nil || !utf8.ValidString(next) || !utf8.ValidString(unescaped) ||
		strings.ContainsAny(next, `\#`) || strings.ContainsAny(unescaped, `\%#`) ||
		strings.IndexFunc(next, unicode.IsControl) >= 0 || strings.IndexFunc(unescaped, unicode.IsControl) >= 0 ||
		path.Clean(unescaped) != unescaped || unescaped != "/console" && !strings.HasPrefix(unescaped, "/console/") {
		return "/console"
	}
	return next
}

// LoginForm is the login page's form, as sent.
type LoginForm struct {
	Token string
	// Next is where to go after logging in, made safe (safeNext).
	Next string
}

// maxTokenLength bounds the token a login form may carry; the router
// bounds the whole form tighter still.
const maxTokenLength = 16 << 10

// ParseLoginForm reads a login form body: application/x-www-form-urlencoded,
// every pair well-formed (Go's parser would drop a malformed one), the
// token given once and non-empty, next at most once.
func ParseLoginForm(contentType string, body []byte) (LoginForm, error) {
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil || media != "application/x-www-form-urlencoded" {
		return LoginForm{}, fmt.Errorf("send it as application/x-www-form-urlencoded (got %.64q)", contentType)
	}
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return LoginForm{}, fmt.Errorf("the form is malformed: %w", err)
	}
	for k, v := range values {
		switch {
		case k != "token" && k != "next":
			return LoginForm{}, fmt.Errorf("unknown field %.64q", k)
		case len(v) > 1:
			return LoginForm{}, fmt.Errorf("field %s is given %d times", k, len(v))
		}
	}
	token := strings.TrimSpace(values.Get("token"))
	switch {
	case token == "":
		return LoginForm{}, errors.New("the token is missing")
	case len(token) > maxTokenLength:
		return LoginForm{}, fmt.Errorf("the token is longer than %d bytes", maxTokenLength)
	}
	return LoginForm{Token: token, Next: safeNext(values.Get("next"))}, nil
}

// filters are the /info/runtimes filters the table offers.
var filters = []struct{ Param, Label string }{
	{"account", "Global account"}, {"subaccount", "Subaccount"}, {"instance_id", "Instance"},
	{"runtime_id", "Runtime"}, {"region", "Region"}, {"plan", "Plan"}, {"shoot", "Shoot"},
}

// states are the state filter's choices.
var states = []string{"provisioning", "succeeded", "failed", "deprovisioning", "suspended", "deprovisioned"}

// kymaStates are the Kyma state filter's choices.
var kymaStates = func() []string {
	out := make([]string, len(kyma.States))
	for i, s := range kyma.States {
		out[i] = string(s)
	}
	return out
}()

// listRuntimes asks the /info/runtimes handler, as an API client would.
func (c *Console) listRuntimes(r *http.Request, q url.Values) (runtimelisting.Response, int, string) {
	var page runtimelisting.Response
	status, msg, _ := c.ask(r, c.opts.Runtimes, "/info/runtimes", nonEmpty(q), nil, &page)
	return page, status, msg
}

// nonEmpty drops a form's empty fields: a filter left blank filters nothing.
func nonEmpty(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		for _, s := range v {
			if s != "" {
				out.Add(k, s)
			}
		}
	}
	return out
}

// ask calls one of keb's API handlers as an API client would (the same
// parsing, the same refusals) and decodes its answer into out; a refusal
// comes back as its status and description. vars are the route's variables.
func (c *Console) ask(r *http.Request, h http.Handler, path string, q url.Values, vars map[string]string, out any) (int, string, http.Header) {
	req := httptest.NewRequestWithContext(r.Context(), http.MethodGet, path+"?"+q.Encode(), nil)
	if vars != nil {
		req = mux.SetURLVars(req, vars)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		var e struct{ Description string }
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		if e.Description == "" {
			e.Description = http.StatusText(rec.Code)
		}
		return rec.Code, e.Description, rec.Header()
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: decoding " + path)
		return http.StatusInternalServerError, "the answer of " + path + " could not be read", rec.Header()
	}
	return http.StatusOK, "", rec.Header()
}

func (c *Console) instancePage(w http.ResponseWriter, r *http.Request, token string) {
	id := mux.Vars(r)["instance_id"]
	page, status, errMsg := c.listRuntimes(r, url.Values{"instance_id": {id}, "state": {"all"}, "actions": {"true"}, "op_detail": {"all"}})
	if status == http.StatusOK && len(page.Data) == 0 {
		status, errMsg = http.StatusNotFound, "no instance "+id
	}
	data := map[string]any{"ID": id, "Error": errMsg}
	if status == http.StatusOK {
		rt := page.Data[0]
		data["Runtime"] = rt
		// The timeline is GET /events' list of the instance.
		list, err := c.opts.Events.List(r.Context(), events.Filter{InstanceIDs: []string{id}})
		if err != nil {
			logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: reading events")
			status, data["Error"] = http.StatusInternalServerError, "the operations could not be read"
		}
		tl := timeline(list)
		layout(tl, c.opts.Steps, time.Now())
		// The whole history: every operation the instance's record keeps,
		// those past the events' retention (no timeline any more) marked.
		inTimeline := map[string]bool{}
		for _, op := range tl {
			inTimeline[op.ID] = true
		}
		data["InTimeline"] = inTimeline
		data["Operations"] = tl
		live := false
		for _, op := range tl {
			live = live || op.InProgress
		}
		// The runtime's own state counts too: a provisioning accepted but
		// not yet picked up has no running step.
		data["Live"] = live || rt.Status.State == "provisioning" || rt.Status.State == "deprovisioning"
		modules, err := c.kymaModules(r.Context(), id)
		if err != nil {
			logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: reading the Kyma module states")
			status, data["Error"] = http.StatusInternalServerError, "the Kyma module states could not be read"
		}
		data["Modules"] = modules
		if rt.Status.State == "deprovisioned" {
			archived, err := c.archivedHistory(r.Context(), id, rt.Status)
			if err != nil {
				logging.FromContext(r.Context(), c.opts.Log).WithError(err).Error("console: reading the archived operations")
				status, data["Error"] = http.StatusInternalServerError, "the archived operations could not be read"
			}
			data["Archived"] = archived
		}
	}
	name := "instance.html"
	if r.URL.Query().Get("fragment") == "instance" {
		name = "instance-body" // the live refresh's
	}
	c.render(w, status, name, data)
}

// kymaModules are the module states of the instance's Kyma CR, as the
// control-plane watch last saw them; none for an archived instance or one
// without a Kyma CR.
func (c *Console) kymaModules(ctx context.Context, id string) ([]kyma.ModuleHealth, error) {
	inst, err := c.opts.Instances.Instance(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && len(inst.KymaModules) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var modules []kyma.ModuleHealth
	if err := json.Unmarshal(inst.KymaModules, &modules); err != nil {
		return nil, fmt.Errorf("decoding the Kyma module states of %s: %w", id, err)
	}
	return modules, nil
}

func (c *Console) render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := c.tmpl.ExecuteTemplate(w, name, data); err != nil && c.opts.Log != nil {
		c.opts.Log.WithError(err).Error("console: rendering " + name)
	}
}

// archivedHistory is what an archived instance's page lists: every
// operation the archive kept with it, oldest first, and how many older ones
// it left out. An instance archived by a keb that kept no operations shows
// what its summary row keeps (archivedOperations).
type archivedHistory struct {
	Operations []runtimelisting.OperationDTO
	LeftOut    int
}

func (c *Console) archivedHistory(ctx context.Context, id string, st runtimelisting.RuntimeStatus) (archivedHistory, error) {
	h, err := c.opts.Instances.ArchivedOperations(ctx, id)
	if err != nil {
		return archivedHistory{Operations: archivedOperations(st)}, err
	}
	if !h.Kept {
		return archivedHistory{Operations: archivedOperations(st)}, nil
	}
	out := archivedHistory{Operations: make([]runtimelisting.OperationDTO, 0, len(h.Operations)), LeftOut: h.LeftOut}
	for _, op := range h.Operations {
		typ := string(op.Type)
		if op.Temporary {
			// A suspension is a deprovisioning that kept the instance: the
			// page says which, as /info/runtimes' suspension list does.
			typ = "suspension"
		}
		out.Operations = append(out.Operations, runtimelisting.OperationDTO{OperationID: op.ID, Type: typ,
			State: string(op.State), Description: op.Description, CreatedAt: op.CreatedAt, UpdatedAt: op.UpdatedAt,
			Error: op.Error})
	}
	return out, nil
}

// archivedOperations are what the archive's summary row keeps of a
// deprovisioned instance's operations, oldest first.
func archivedOperations(st runtimelisting.RuntimeStatus) []runtimelisting.OperationDTO {
	var ops []runtimelisting.OperationDTO
	for _, op := range []*runtimelisting.OperationDTO{st.Provisioning, st.Update.Newest(), st.Suspension.Newest(),
		st.Unsuspension.Newest(), st.UpgradingKyma.Newest(), st.UpgradingCluster.Newest(), st.Deprovisioning} {
		if op != nil && op.OperationID != "" {
			ops = append(ops, *op)
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].CreatedAt.Before(ops[j].CreatedAt) })
	return ops
}

// ago renders how long ago t was.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}
