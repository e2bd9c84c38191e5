package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/kyma-keb/keb/internal/auth"
)

// keb login keeps a broker's URL and an OAuth2 client; the operator commands
// then call that broker with a token the client gets for the scopes each
// needs, until keb logout. A login that cannot get a token is refused and
// saves nothing.
func TestLoginThenCommandsUseIt(t *testing.T) {
	dir := t.TempDir()
	key, err := auth.LoadOrCreateDevKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	client, err := auth.LoadOrCreateDevClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	var gotScopes []string
	mux := http.NewServeMux()
	mux.Handle("POST /oauth2/token", auth.DevTokenHandler(key, client, "https://issuer.example", "keb"))
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"version":"v-test"}`)) })
	mux.HandleFunc("GET /info/runtimes", func(w http.ResponseWriter, r *http.Request) {
		claims := jwt.MapClaims{}
		_, err := jwt.ParseWithClaims(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), claims,
			func(*jwt.Token) (any, error) { return key.Public(), nil })
		if err != nil {
			http.Error(w, `{"error":"Unauthorized","description":"`+err.Error()+`"}`, http.StatusUnauthorized)
			return
		}
		s, _ := claims["scope"].(string)
		gotScopes = strings.Fields(s)
		w.Write([]byte(`{"data":[],"count":0,"totalCount":0}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	configFile := filepath.Join(t.TempDir(), "keb", "config.json")
	t.Setenv("KEB_CONFIG", configFile)

	login := func(args ...string) (string, error) {
		fs := flag.NewFlagSet("login", flag.ContinueOnError)
		var out bytes.Buffer
		runFn := bindLogin(fs, &out)
		if err := fs.Parse(args); err != nil {
			return "", err
		}
		err := runFn(context.Background(), fs.Args())
		return out.String(), err
	}
	for _, bad := range [][]string{
		{"--url", srv.URL, "--token-url", srv.URL + "/oauth2/token", "--client-id", client.ID, "--client-secret", "wrong"},
		{"--url", srv.URL},
		{"--url", "keb.example.com", "--token", "t"},
		{"--url", srv.URL, "--token", "t", "--client-id", client.ID},
		{"--url", srv.URL + "/nothing-here", "--token", "t"},
	} {
		if _, err := login(bad...); err == nil {
			t.Errorf("keb login %v succeeded", bad)
		}
		if _, err := os.Stat(configFile); err == nil {
			t.Fatalf("keb login %v saved %s", bad, configFile)
		}
	}

	out, err := login("--url", srv.URL+"/", "--token-url", srv.URL+"/oauth2/token", "--client-id", client.ID, "--client-secret", client.Secret)
	if err != nil || !strings.Contains(out, "logged in to "+srv.URL+" with client "+client.ID) {
		t.Fatalf("keb login: %v %q", err, out)
	}
	if fi, err := os.Stat(configFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved login: %v, mode %v; want 0600", err, fi)
	}
	var saved loginConfig
	raw, _ := os.ReadFile(configFile)
	if json.Unmarshal(raw, &saved) != nil || saved.URL != srv.URL || saved.ClientSecret != client.Secret {
		t.Fatalf("saved %s", raw)
	}

	// No --url, no --token, no keb dev: keb login's broker, with a token
	// of cld:read only.
	code, _, errOut := runKeb("runtimes", "--dir", t.TempDir())
	if code != 0 || strings.Join(gotScopes, " ") != auth.ScopeCLDRead {
		t.Fatalf("keb runtimes after keb login: exit %d, token scopes %v, stderr %s", code, gotScopes, errOut)
	}

	captureStdout(t, func() { code, _, _ = runKeb("logout") })
	if _, err := os.Stat(configFile); code != 0 || !os.IsNotExist(err) {
		t.Fatalf("keb logout: exit %d, %s still there (%v)", code, configFile, err)
	}
	gotScopes = nil
	if code, _, errOut := runKeb("runtimes", "--dir", t.TempDir()); code == 0 || gotScopes != nil || !strings.Contains(errOut, "keb dev") {
		t.Errorf("keb runtimes after keb logout: exit %d, reached the logged-out broker (%v); stderr %s", code, gotScopes, errOut)
	}
}
