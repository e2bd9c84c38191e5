package auth

import (
	"crypto"
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestDevKeyPersisted(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state") // not there yet: created on demand
	key, err := LoadOrCreateDevKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "dev-signing-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("key file mode = %o, want 600", mode)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "dev-signing-key.pem"))
	if !strings.HasPrefix(string(data), "-----BEGIN PRIVATE KEY-----") {
		t.Errorf("key file is not PKCS#8 PEM: %.40s", data)
	}
	if _, ok := key.Public().(*ecdsa.PublicKey); !ok {
		t.Errorf("Public() = %T", key.Public())
	}
	if key.KeyID() != mustThumbprint(t, key.Public()) {
		t.Error("KeyID is not the RFC 7638 thumbprint")
	}

	again, err := LoadOrCreateDevKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.KeyID() != key.KeyID() {
		t.Fatalf("KeyID changed after reload: %s -> %s", key.KeyID(), again.KeyID())
	}
	other, err := LoadOrCreateDevKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if other.KeyID() == key.KeyID() {
		t.Fatal("two directories share a dev key")
	}
}

func TestDevKeyConcurrentCreation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range kids {
		wg.Go(func() {
			key, err := LoadOrCreateDevKey(dir)
			if err != nil {
				t.Error(err)
				return
			}
			kids[i] = key.KeyID()
		})
	}
	wg.Wait()
	if kids[0] == "" || slices.ContainsFunc(kids, func(k string) bool { return k != kids[0] }) {
		t.Fatalf("concurrent creation produced different keys: %q", kids)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestDevKeyLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		content string
		wantErr string
	}{
		{name: "not PEM", content: "junk", wantErr: "no PEM"},
		{name: "public key instead of private", content: string(pemPublic(t, &keys().ec.PublicKey)), wantErr: "no PEM"},
		{name: "corrupt", content: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", wantErr: "dev-signing-key.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dev-signing-key.pem"), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadOrCreateDevKey(dir); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestDevKeyMint(t *testing.T) {
	t.Parallel()
	key, err := LoadOrCreateDevKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := key.Mint(testIssuer, testAudience, "keb-dev", []string{ScopeBrokerWrite, ScopeCLDRead}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, Config{PublicKeys: []crypto.PublicKey{key.Public()}, Issuer: testIssuer, Audience: testAudience})
	claims, err := v.Verify(t.Context(), raw)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if claims.Subject != "keb-dev" || claims.ClientID != "keb-dev" || claims.ID == "" {
		t.Errorf("claims = %+v", claims)
	}
	if !slices.Equal(claims.Scopes, []string{ScopeBrokerWrite, ScopeCLDRead}) {
		t.Errorf("scopes = %q", claims.Scopes)
	}
	if d := time.Until(claims.ExpiresAt.Time); d < 59*time.Minute || d > time.Hour {
		t.Errorf("expires in %v, want 1h", d)
	}

	// The wire format: kid header, ES256, scope as a space-separated string.
	mc := jwt.MapClaims{}
	token, _, err := jwt.NewParser().ParseUnverified(raw, mc)
	if err != nil {
		t.Fatal(err)
	}
	if token.Header["kid"] != key.KeyID() || token.Header["alg"] != "ES256" {
		t.Errorf("header = %v", token.Header)
	}
	if mc["scope"] != "broker:write cld:read" {
		t.Errorf("scope claim = %#v", mc["scope"])
	}

	wrongAud := newVerifier(t, Config{PublicKeys: []crypto.PublicKey{key.Public()}, Audience: "other"})
	if _, err := wrongAud.Verify(t.Context(), raw); err == nil {
		t.Error("dev token accepted for another audience")
	}
	short, err := key.Mint(testIssuer, testAudience, "keb-dev", nil, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), short); err == nil {
		t.Error("expired dev token accepted")
	}
}

func TestDevKeyJWKS(t *testing.T) {
	t.Parallel()
	key, err := LoadOrCreateDevKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := key.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || set.Keys[0]["kid"] != key.KeyID() || set.Keys[0]["alg"] != "ES256" || set.Keys[0]["d"] != nil {
		t.Fatalf("JWKS = %s", jwks)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(jwks) }))
	t.Cleanup(srv.Close)
	v := newVerifier(t, Config{JWKSURLs: []string{srv.URL + "/.well-known/jwks.json"}, Issuer: testIssuer})
	raw, err := key.Mint(testIssuer, "", "keb-dev", allScopes, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), raw); err != nil {
		t.Fatalf("dev token via JWKS: %v", err)
	}
}

func TestDevClientPersisted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := LoadOrCreateDevClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == "" || len(c.Secret) < 32 {
		t.Fatalf("client = %+v", c)
	}
	info, err := os.Stat(filepath.Join(dir, "dev-client.json"))
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("client file mode = %o, want 600", mode)
	}
	again, err := LoadOrCreateDevClient(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again != c {
		t.Fatalf("client changed after reload: %+v -> %+v", c, again)
	}
	other, err := LoadOrCreateDevClient(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if other.Secret == c.Secret {
		t.Fatal("secrets are not random")
	}
}

func TestDevClientLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, content string }{
		{name: "not JSON", content: "client=x"},
		{name: "empty secret", content: `{"client_id":"x","client_secret":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dev-client.json"), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadOrCreateDevClient(dir); err == nil || !strings.Contains(err.Error(), "dev-client.json") {
				t.Fatalf("error = %v, want one naming the file", err)
			}
		})
	}
}
