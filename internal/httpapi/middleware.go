package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/logging"
)

// The headers keb reads and writes on every request, spelt canonically
// (X-Broker-API-Version is X-Broker-Api-Version): Header.Get and Set
// allocate a canonical copy of any other spelling, on every call, and the
// request's own headers are assigned to the header map as they are.
const (
	headerRequestID       = "X-Request-Id"
	headerRequestIdentity = "X-Broker-Api-Request-Identity"
	headerAPIVersion      = "X-Broker-Api-Version"
	headerCorrelationID   = "X-Correlation-Id"
)

// requestContext gives every request an ID (the caller's X-Request-Id or a
// new one) and a logger carrying it, and echoes OSB's request identity on
// every answer, including those keb writes before brokerapi runs.
func requestContext(log logrus.FieldLogger) mux.MiddlewareFunc {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			id := req.Header.Get(headerRequestID)
			if id == "" || len(id) > 128 {
				id = uuid.NewString()
			}
			h := w.Header()
			h[headerRequestID] = []string{id} // canonical keys (above)
			ident := req.Header.Get(headerRequestIdentity)
			if ident != "" {
				h[headerRequestIdentity] = []string{ident}
				ident = logSafe(ident)
			}
			next.ServeHTTP(w, req.WithContext(logging.WithRequest(req.Context(), log, id, ident)))
		})
	}
}

// statusRecorder remembers the status code and the route for logs and
// metrics; the metrics' recorder is the access log's too (recorderFor).
type statusRecorder struct {
	http.ResponseWriter
	status int
	route  string
}

// recorderFor returns w when it is a recorder already (the metrics' one,
// around the access log), so that a request allocates one.
func recorderFor(w http.ResponseWriter) *statusRecorder {
	if rec, ok := w.(*statusRecorder); ok {
		return rec
	}
	return &statusRecorder{ResponseWriter: w}
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// routeOf is req's route template, looked up once per recorder.
func (s *statusRecorder) routeOf(req *http.Request) string {
	if s.route == "" {
		s.route = routeOf(req)
	}
	return s.route
}

func routeOf(req *http.Request) string {
	if r := mux.CurrentRoute(req); r != nil {
		if t, err := r.GetPathTemplate(); err == nil {
			return t
		}
	}
	return "unmatched"
}

// accessLog writes one line per request, with the fields its handler added
// (logging.AddAccessFields: the operation a PUT or DELETE accepted). Probes, answered polls
// (last_operation, 200), served catalogs (200, 304) and keb dev's stand-ins'
// answers below 400 are logged at debug
// level so that they don't drown the log: a platform polls every operation
// every few seconds for as long as it runs, and reads the catalog over and
// over; writing those lines cost more CPU than answering the requests. A
// poll or catalog read that fails (4xx, 5xx) is still logged.
func accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rec := recorderFor(w)
		serveRecovering(next, rec, req)
		route, status := rec.routeOf(req), rec.code()
		level := logrus.InfoLevel
		switch {
		case route == "/healthz" || route == "/readyz" || route == "/metrics":
			level = logrus.DebugLevel
		case status == http.StatusOK && req.Method == http.MethodGet && strings.HasSuffix(route, "/last_operation"):
			level = logrus.DebugLevel
		case (status == http.StatusOK || status == http.StatusNotModified) && req.Method == http.MethodGet &&
			strings.HasSuffix(route, "/v2/catalog"):
			level = logrus.DebugLevel
		case status < 400 && strings.HasPrefix(route, "/dev/"):
			// keb dev's stand-ins, which its own cleanup job polls.
			level = logrus.DebugLevel
		case status >= 500:
			level = logrus.ErrorLevel
		}
		if !logging.LevelEnabled(req.Context(), logrus.StandardLogger(), level) {
			return // not even the fields are built
		}
		// The handler's fields are this line's alone: they take the rest.
		fields := logging.AccessFieldsOf(req.Context()).Fields()
		if fields == nil {
			fields = make(logrus.Fields, 5)
		}
		fields["method"], fields["route"], fields["path"] = logSafe(req.Method), route, logSafe(req.URL.Path)
		fields["status"], fields["duration_ms"] = status, time.Since(start).Milliseconds()
		logging.FromContext(req.Context(), logrus.StandardLogger()).WithFields(fields).Log(level, "request")
	})
}

// serveRecovering runs next and turns its panic into an error log line with
// the stack and, while nothing is written yet, a 500 with an OSB error body.
// Without it net/http recovers the panic itself: it prints it to stderr, not
// to the JSON log, and closes the connection unanswered, which a platform
// reads as a broken connection rather than a failed request. A panic after
// the status is written still aborts the connection: the answer is cut.
func serveRecovering(next http.Handler, rec *statusRecorder, req *http.Request) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler {
			panic(p)
		}
		logging.FromContext(req.Context(), logrus.StandardLogger()).
			WithFields(logrus.Fields{"panic": fmt.Sprint(p), "stack": string(debug.Stack()), "route": routeOf(req)}).
			Error("request handler panicked")
		if rec.status != 0 {
			panic(http.ErrAbortHandler)
		}
		writeError(rec, http.StatusInternalServerError, "InternalError",
			"keb failed on this request; its log holds the cause under this answer's X-Request-Id")
	}()
	next.ServeHTTP(rec, req)
}

// validAPIVersion reports whether v is "2.<minor>", the minor a plain
// decimal number of at most four digits (no sign, no leading zero).
func validAPIVersion(v string) bool {
	minor, ok := strings.CutPrefix(v, "2.")
	if !ok || minor == "" || len(minor) > 4 || (minor[0] == '0' && len(minor) > 1) {
		return false
	}
	for i := 0; i < len(minor); i++ {
		if minor[i] < '0' || minor[i] > '9' {
			return false
		}
	}
	return true
}

// maxLoggedValue bounds every client value keb logs (a header, a path, a
// method): a hostile one must not make one line kilobytes long.
const maxLoggedValue = 256

// logSafe shortens a client's value for a log line to its first
// maxLoggedValue bytes (cut at a character boundary) and says how many it
// left out.
func logSafe(s string) string {
	if len(s) <= maxLoggedValue {
		return s
	}
	cut := maxLoggedValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(truncated %d bytes)", s[:cut], len(s)-cut)
}

// checkAPIVersion answers 412 for a missing or non-2.x X-Broker-API-Version
// with an OSB error body. brokerapi checks too, but its body lacks the
// "error" field, and it takes "2.14banana" for 2.14.
func checkAPIVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		v := req.Header.Get(headerAPIVersion)
		if !validAPIVersion(v) {
			writeError(w, http.StatusPreconditionFailed, "PreconditionFailed",
				fmt.Sprintf("header X-Broker-API-Version must be 2.x (got %s); keb implements OSB API 2.17", quoteValue(v)))
			return
		}
		next.ServeHTTP(w, req)
	})
}

// securityHeaders marks every answer as not to be sniffed or cached (OSB
// answers and runtime listings name accounts and must not linger in caches
// between the broker and its callers) nor framed (the console's pages
// inside another site's frame could be clicked through unseen).
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h := w.Header()
		h["X-Content-Type-Options"] = headerNosniff
		h["Cache-Control"] = headerNoStore
		h["X-Frame-Options"] = headerDeny
		h["Content-Security-Policy"] = headerNoFrames
		next.ServeHTTP(w, req)
	})
}

// Header values every answer shares, assigned to the header map as they are
// (canonical keys) rather than through Header.Set, which allocates a slice
// per value and request. Their length equals their capacity, so a handler's
// Header.Add copies rather than writes into them; nothing writes an element.
var (
	headerNosniff  = []string{"nosniff"}
	headerNoStore  = []string{"no-store"}
	headerDeny     = []string{"DENY"}
	headerNoFrames = []string{"frame-ancestors 'none'"}
)

// hintWriter sets Retry-After from the broker's hints just before the status
// line goes out.
type hintWriter struct {
	http.ResponseWriter
	hints *broker.Hints
}

func (h *hintWriter) WriteHeader(code int) {
	if h.hints.RetryAfter > 0 && code == http.StatusOK {
		setRetryAfter(h.Header(), h.hints.RetryAfter)
	}
	h.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (h *hintWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// retryUnavailable is the Retry-After of a 503 (the database is down or too
// slow): long enough not to hammer a recovering database, short enough that
// a platform's retry lands soon after it is back.
const retryUnavailable = 10 * time.Second

func setRetryAfter(h http.Header, d time.Duration) {
	secs := int(d.Round(time.Second) / time.Second)
	h.Set("Retry-After", strconv.Itoa(max(secs, 1)))
}

// withDeadline bounds all work a request does (its database work included)
// by d, so that a hung or frozen database is answered with a 503 before the
// platform gives up on the request (typically after 60 s) and starts orphan
// mitigation. Zero means no bound. Every 503 of the handlers it wraps gets
// Retry-After.
func withDeadline(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if d > 0 {
				ctx, cancel := context.WithTimeout(req.Context(), d)
				defer cancel()
				req = req.WithContext(ctx)
			}
			next.ServeHTTP(&unavailableWriter{ResponseWriter: w}, req)
		})
	}
}

// unavailableWriter adds Retry-After to a 503.
type unavailableWriter struct{ http.ResponseWriter }

func (u *unavailableWriter) WriteHeader(code int) {
	if code == http.StatusServiceUnavailable && u.Header().Get("Retry-After") == "" {
		setRetryAfter(u.Header(), retryUnavailable)
	}
	u.ResponseWriter.WriteHeader(code)
}

func withResponseHints(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, hints := broker.ContextWithHints(req.Context())
		next.ServeHTTP(&hintWriter{ResponseWriter: w, hints: hints}, req.WithContext(ctx))
	})
}

// writeError writes an OSB error body. Descriptions quote what the client
// sent ("&", "<"): they are JSON for an API client, not HTML.
func writeError(w http.ResponseWriter, status int, key, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"error": key, "description": description})
}

func notFound(w http.ResponseWriter, req *http.Request) {
	writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("no route for %s %s", req.Method, req.URL.Path))
}

// methodNotAllowed answers 405 with the Allow header RFC 9110 asks for:
// the methods r routes the path for.
func methodNotAllowed(r *mux.Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Allow", strings.Join(allowed(r, req), ", "))
		writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("%s is not allowed on %s", req.Method, logSafe(req.URL.Path)))
	})
}

func notYetServed(w http.ResponseWriter, req *http.Request) {
	writeError(w, http.StatusNotImplemented, "NotImplemented", fmt.Sprintf("%s is not served by this version of keb", req.URL.Path))
}
