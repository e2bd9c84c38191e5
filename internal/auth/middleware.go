package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Require returns middleware that demands a valid bearer token carrying
// scope (an empty scope only demands a valid token). Failures follow RFC 6750:
// 401 for a missing or invalid token, 403 for a valid token lacking the scope.
// On success the claims are available through ClaimsFromContext.
func (v *Verifier) Require(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if claims, ok := v.authorize(w, r, scope); ok {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsKey{}, claims)))
			}
		})
	}
}

// Check demands what Require demands, and answers the same failures, but
// leaves the claims out of the request: for handlers that do not read them
// (the catalog), whose requests then need no copy with a context of their
// own (a third of what a catalog read allocated in keb).
func (v *Verifier) Check(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := v.authorize(w, r, scope); ok {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// authorize verifies r's bearer token and its scope, and answers the
// request when they fail (ok false).
func (v *Verifier) authorize(w http.ResponseWriter, r *http.Request, scope string) (claims *Claims, ok bool) {
	header := r.Header.Get("Authorization")
	if header == "" {
		// RFC 6750 §3.1: no error code when no credentials were sent.
		v.rejected(RejectMissingToken)
		w.Header().Set("WWW-Authenticate", "Bearer")
		writeAuthError(w, http.StatusUnauthorized, "Unauthorized", "missing bearer token")
		return nil, false
	}
	scheme, token, _ := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		v.rejected(RejectMalformedHeader)
		rejectToken(w, "authorization header is not of the form 'Bearer <token>'")
		return nil, false
	}
	claims, err := v.Verify(r.Context(), token)
	if err != nil {
		v.log.WithError(err).WithField("path", r.URL.Path).Debug("auth: rejected bearer token")
		v.rejected(rejectionReason(err))
		rejectToken(w, err.Error())
		return nil, false
	}
	if scope != "" && !claims.HasScope(scope) {
		v.rejected(RejectInsufficientScope)
		w.Header().Set("WWW-Authenticate",
			`Bearer error="insufficient_scope", scope="`+headerSafe(scope)+`"`)
		writeAuthError(w, http.StatusForbidden, "Forbidden", "token lacks scope "+scope)
		return nil, false
	}
	return claims, true
}

// OnReject, when set, is told the reason of every refused request (for a
// metric). Set it before the first request.
func (v *Verifier) OnReject(f func(reason string)) { v.onReject = f }

func (v *Verifier) rejected(reason string) {
	if v.onReject != nil {
		v.onReject(reason)
	}
}

func rejectToken(w http.ResponseWriter, description string) {
	w.Header().Set("WWW-Authenticate",
		`Bearer error="invalid_token", error_description="`+headerSafe(description)+`"`)
	writeAuthError(w, http.StatusUnauthorized, "Unauthorized", description)
}

// headerSafe keeps a message inside a quoted-string of the challenge.
var headerSafe = strings.NewReplacer(`"`, `'`, `\`, `/`, "\r", " ", "\n", " ").Replace

// writeAuthError answers a request that is not authorised. Its body is not
// read: the connection is closed after the answer, so an unauthenticated
// client cannot hold it by sending a body slowly (Go's server would read
// the body before writing the answer to keep the connection alive).
func writeAuthError(w http.ResponseWriter, status int, title, description string) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error       string `json:"error"`
		Description string `json:"description"`
	}{title, description})
	// After the handler Go's server still reads up to 256 KiB of an unread
	// body before closing; a deadline in the past makes it give up at once,
	// so the connection is released now rather than at the read timeout.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}
