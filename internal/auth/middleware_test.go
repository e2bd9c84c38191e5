package auth

import (
	"crypto"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestRequire(t *testing.T) {
	t.Parallel()
	k := keys()
	v := newVerifier(t, Config{
		PublicKeys: []crypto.PublicKey{&k.ec.PublicKey},
		Issuer:     testIssuer,
		Audience:   testAudience,
	})
	valid := sign(t, jwt.SigningMethodES256, k.ec, "", claimsWith(nil))
	expired := sign(t, jwt.SigningMethodES256, k.ec, "", claimsWith(func(c jwt.MapClaims) {
		c["exp"] = time.Now().Add(-time.Hour).Unix()
	}))
	readOnly := sign(t, jwt.SigningMethodES256, k.ec, "", claimsWith(func(c jwt.MapClaims) {
		c["scp"] = []string{ScopeCLDRead}
	}))

	tests := []struct {
		name            string
		authorization   string // empty: no header
		scope           string
		wantStatus      int
		wantChallenge   string // exact, or prefix when it ends with '*'
		wantError       string
		wantDescription string // substring
	}{
		{
			name: "valid token with scope", authorization: "Bearer " + valid, scope: ScopeBrokerWrite,
			wantStatus: http.StatusOK,
		},
		{
			name: "scheme is case-insensitive", authorization: "bearer " + valid, scope: ScopeBrokerWrite,
			wantStatus: http.StatusOK,
		},
		{
			name: "empty scope only authenticates", authorization: "Bearer " + readOnly, scope: "",
			wantStatus: http.StatusOK,
		},
		{
			name: "missing header", scope: ScopeBrokerWrite,
			wantStatus: http.StatusUnauthorized, wantChallenge: "Bearer",
			wantError: "Unauthorized", wantDescription: "missing bearer token",
		},
		{
			name: "wrong scheme", authorization: "Basic a2ViOnNlY3JldA==", scope: ScopeBrokerWrite,
			wantStatus: http.StatusUnauthorized, wantChallenge: `Bearer error="invalid_token", error_description="authorization header is not of the form 'Bearer <token>'"`,
			wantError: "Unauthorized", wantDescription: "Bearer <token>",
		},
		{
			name: "scheme without token", authorization: "Bearer ", scope: ScopeBrokerWrite,
			wantStatus: http.StatusUnauthorized, wantChallenge: `Bearer error="invalid_token"*`,
			wantError: "Unauthorized", wantDescription: "Bearer <token>",
		},
		{
			name: "garbage token", authorization: "Bearer garbage", scope: ScopeBrokerWrite,
			wantStatus: http.StatusUnauthorized, wantChallenge: `Bearer error="invalid_token", error_description="token is malformed*`,
			wantError: "Unauthorized", wantDescription: "token is malformed",
		},
		{
			name: "expired token", authorization: "Bearer " + expired, scope: ScopeBrokerWrite,
			wantStatus: http.StatusUnauthorized, wantChallenge: `Bearer error="invalid_token", error_description="token has invalid claims: token is expired"`,
			wantError: "Unauthorized", wantDescription: "token is expired",
		},
		{
			name: "valid token without scope", authorization: "Bearer " + readOnly, scope: ScopeBrokerWrite,
			wantStatus: http.StatusForbidden, wantChallenge: `Bearer error="insufficient_scope", scope="broker:write"`,
			wantError: "Forbidden", wantDescription: "token lacks scope broker:write",
		},
	}
	// Check answers as Require does, and hands no claims on.
	middlewares := []struct {
		name   string
		build  func(scope string) func(http.Handler) http.Handler
		claims bool
	}{{"Require", v.Require, true}, {"Check", v.Check, false}}
	for _, mw := range middlewares {
		for _, tt := range tests {
			t.Run(mw.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				var reached bool
				h := mw.build(tt.scope)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					reached = true
					claims, ok := ClaimsFromContext(r.Context())
					if mw.claims && (!ok || claims.Subject != "client-1") {
						t.Errorf("claims in context = %+v, %v", claims, ok)
					}
					if !mw.claims && ok {
						t.Errorf("Check handed claims on: %+v", claims)
					}
					w.WriteHeader(http.StatusOK)
				}))
				req := httptest.NewRequest(http.MethodPut, "/oauth/v2/service_instances/1", nil)
				if tt.authorization != "" {
					req.Header.Set("Authorization", tt.authorization)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)

				if rec.Code != tt.wantStatus {
					t.Fatalf("status = %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
				}
				if tt.wantStatus == http.StatusOK {
					if !reached {
						t.Fatal("handler not reached")
					}
					return
				}
				if reached {
					t.Fatal("handler reached on failure")
				}
				got := rec.Header().Get("WWW-Authenticate")
				if prefix, ok := strings.CutSuffix(tt.wantChallenge, "*"); ok {
					if !strings.HasPrefix(got, prefix) {
						t.Errorf("WWW-Authenticate = %q, want prefix %q", got, prefix)
					}
				} else if got != tt.wantChallenge {
					t.Errorf("WWW-Authenticate = %q, want %q", got, tt.wantChallenge)
				}
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %q", ct)
				}
				var body map[string]string
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Fatalf("body %q: %v", rec.Body, err)
				}
				if body["error"] != tt.wantError || !strings.Contains(body["description"], tt.wantDescription) {
					t.Errorf("body = %v, want error %q and description containing %q", body, tt.wantError, tt.wantDescription)
				}
				if len(body) != 2 {
					t.Errorf("body has unexpected fields: %v", body)
				}
			})
		}
	}
}

func TestRequireForbiddenBodyExact(t *testing.T) {
	t.Parallel()
	k := keys()
	v := newVerifier(t, Config{PublicKeys: []crypto.PublicKey{&k.ec.PublicKey}})
	h := v.Require(ScopeBrokerWrite)(http.NotFoundHandler())
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer "+sign(t, jwt.SigningMethodES256, k.ec, "", claimsWith(func(c jwt.MapClaims) { delete(c, "scp") })))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got, want := strings.TrimSpace(rec.Body.String()), `{"error":"Forbidden","description":"token lacks scope broker:write"}`; got != want {
		t.Fatalf("body = %s, want %s", got, want)
	}
}

func TestHeaderSafe(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{name: "quotes", in: `unknown kid "x"`, want: `unknown kid 'x'`},
		{name: "newline and backslash", in: "a\r\nb\\c", want: "a  b/c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := headerSafe(tt.in); got != tt.want {
				t.Errorf("headerSafe(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
