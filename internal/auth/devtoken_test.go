package auth

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// tokenRequest describes a token endpoint call; fields are sent as
// urlencoded or multipart form like `curl -d` or `curl -F`.
type tokenRequest struct {
	method    string
	multipart bool
	basic     *[2]string
	fields    [][2]string
}

func (tr tokenRequest) build(t *testing.T) *http.Request {
	t.Helper()
	var body io.Reader
	contentType := "application/x-www-form-urlencoded"
	if tr.multipart {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range tr.fields {
			if err := mw.WriteField(f[0], f[1]); err != nil {
				t.Fatal(err)
			}
		}
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		body, contentType = &buf, mw.FormDataContentType()
	} else {
		form := url.Values{}
		for _, f := range tr.fields {
			form.Add(f[0], f[1])
		}
		body = strings.NewReader(form.Encode())
	}
	method := tr.method
	if method == "" {
		method = http.MethodPost
	}
	req := httptest.NewRequest(method, "/oauth2/token", body)
	req.Header.Set("Content-Type", contentType)
	if tr.basic != nil {
		// As in the tutorial: Authorization: Basic $ENCODED_CREDENTIALS
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(tr.basic[0]+":"+tr.basic[1])))
	}
	return req
}

func TestDevTokenHandler(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := LoadOrCreateDevKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	client, err := LoadOrCreateDevClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	handler := DevTokenHandler(key, client, testIssuer, testAudience)
	v := newVerifier(t, Config{PublicKeys: []crypto.PublicKey{key.Public()}, Issuer: testIssuer, Audience: testAudience})
	creds := &[2]string{client.ID, client.Secret}
	grant := [2]string{"grant_type", "client_credentials"}
	allGranted := "broker:write cld:read broker-upgrade:read broker-upgrade:write kubeconfig:read"

	tests := []struct {
		name       string
		req        tokenRequest
		wantStatus int
		wantError  string // OAuth2 error code
		wantScope  string
	}{
		{name: "urlencoded, no scope grants all", req: tokenRequest{basic: creds, fields: [][2]string{grant}}, wantStatus: 200, wantScope: allGranted},
		{
			name:       "multipart as in the tutorial",
			req:        tokenRequest{multipart: true, basic: creds, fields: [][2]string{grant, {"scope", "broker:write"}}},
			wantStatus: 200, wantScope: "broker:write",
		},
		{
			name:       "urlencoded with two scopes, duplicate dropped",
			req:        tokenRequest{basic: creds, fields: [][2]string{grant, {"scope", "cld:read broker-upgrade:read cld:read"}}},
			wantStatus: 200, wantScope: "cld:read broker-upgrade:read",
		},
		{
			name:       "credentials in form fields",
			req:        tokenRequest{fields: [][2]string{grant, {"client_id", client.ID}, {"client_secret", client.Secret}}},
			wantStatus: 200, wantScope: allGranted,
		},
		{
			name:       "credentials in multipart fields",
			req:        tokenRequest{multipart: true, fields: [][2]string{grant, {"client_id", client.ID}, {"client_secret", client.Secret}}},
			wantStatus: 200, wantScope: allGranted,
		},
		{name: "wrong secret", req: tokenRequest{basic: &[2]string{client.ID, "nope"}, fields: [][2]string{grant}}, wantStatus: 401, wantError: "invalid_client"},
		{name: "wrong client id", req: tokenRequest{basic: &[2]string{"other", client.Secret}, fields: [][2]string{grant}}, wantStatus: 401, wantError: "invalid_client"},
		{name: "no credentials", req: tokenRequest{fields: [][2]string{grant}}, wantStatus: 401, wantError: "invalid_client"},
		{
			name:       "two authentication methods",
			req:        tokenRequest{basic: creds, fields: [][2]string{grant, {"client_secret", client.Secret}}},
			wantStatus: 401, wantError: "invalid_client",
		},
		{
			name:       "unsupported grant type",
			req:        tokenRequest{multipart: true, basic: creds, fields: [][2]string{{"grant_type", "password"}}},
			wantStatus: 400, wantError: "unsupported_grant_type",
		},
		{name: "missing grant type", req: tokenRequest{basic: creds}, wantStatus: 400, wantError: "invalid_request"},
		{
			name:       "unknown scope",
			req:        tokenRequest{basic: creds, fields: [][2]string{grant, {"scope", "broker:write admin"}}},
			wantStatus: 400, wantError: "invalid_scope",
		},
		{name: "GET", req: tokenRequest{method: http.MethodGet, basic: creds}, wantStatus: 405, wantError: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, tt.req.build(t))

			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", rec.Code, tt.wantStatus, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q", cc)
			}
			var body struct {
				AccessToken string `json:"access_token"`
				TokenType   string `json:"token_type"`
				ExpiresIn   int    `json:"expires_in"`
				Scope       string `json:"scope"`
				Error       string `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if tt.wantError != "" {
				if body.Error != tt.wantError || body.AccessToken != "" {
					t.Fatalf("body = %s, want error %q", rec.Body, tt.wantError)
				}
				switch rec.Code {
				case http.StatusUnauthorized:
					if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Basic") {
						t.Errorf("WWW-Authenticate = %q", rec.Header().Get("WWW-Authenticate"))
					}
				case http.StatusMethodNotAllowed:
					if rec.Header().Get("Allow") != http.MethodPost {
						t.Errorf("Allow = %q", rec.Header().Get("Allow"))
					}
				}
				return
			}
			if body.TokenType != "bearer" || body.ExpiresIn != 3600 || body.Scope != tt.wantScope {
				t.Fatalf("body = %s", rec.Body)
			}
			claims, err := v.Verify(t.Context(), body.AccessToken)
			if err != nil {
				t.Fatalf("minted token does not verify: %v", err)
			}
			if got := strings.Join(claims.Scopes, " "); got != tt.wantScope {
				t.Errorf("token scopes = %q, want %q", got, tt.wantScope)
			}
			if claims.ClientID != client.ID {
				t.Errorf("client_id = %q", claims.ClientID)
			}
		})
	}
}

// TestDevTokenEndToEnd follows the tutorial: fetch a token with curl -F and
// call a protected endpoint with it.
func TestDevTokenEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := LoadOrCreateDevKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	client, err := LoadOrCreateDevClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, Config{PublicKeys: []crypto.PublicKey{key.Public()}, Issuer: "http://localhost:8080", Audience: "keb"})
	mux := http.NewServeMux()
	mux.Handle("/oauth2/token", DevTokenHandler(key, client, "http://localhost:8080", "keb"))
	mux.Handle("/oauth/v2/service_instances/", v.Require(ScopeBrokerWrite)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claims, _ := ClaimsFromContext(r.Context())
		_, _ = io.WriteString(w, claims.ClientID)
	})))
	mux.Handle("/runtimes", v.Require(ScopeCLDRead)(http.NotFoundHandler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	req := tokenRequest{multipart: true, basic: &[2]string{client.ID, client.Secret},
		fields: [][2]string{{"grant_type", "client_credentials"}, {"scope", "broker:write"}}}.build(t)
	req.URL, _ = url.Parse(srv.URL + "/oauth2/token")
	req.RequestURI = ""
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 200 {
		t.Fatalf("token request: %d %v", resp.StatusCode, err)
	}

	call := func(path string) (int, string) {
		r, _ := http.NewRequest(http.MethodPut, srv.URL+path, nil)
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("/oauth/v2/service_instances/1"); code != 200 || body != client.ID {
		t.Errorf("protected call = %d %q", code, body)
	}
	if code, _ := call("/runtimes"); code != http.StatusForbidden {
		t.Errorf("call without scope = %d, want 403", code)
	}
}
