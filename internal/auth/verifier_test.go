package auth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	k := keys()
	v := newVerifier(t, Config{
		PublicKeys: []crypto.PublicKey{&k.ec.PublicKey, &k.rsa.PublicKey, &k.ec384.PublicKey, k.ed.Public()},
		Issuer:     testIssuer,
		Audience:   testAudience,
	})
	ecKID := mustThumbprint(t, &k.ec.PublicKey)
	now := time.Now()

	tests := []struct {
		name       string
		token      func(t *testing.T) string
		wantErr    error // nil means the token must verify
		wantScopes []string
		wantClient string
	}{
		{
			name:       "ES256 with thumbprint kid",
			token:      func(t *testing.T) string { return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(nil)) },
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name:       "ES256 without kid",
			token:      func(t *testing.T) string { return sign(t, jwt.SigningMethodES256, k.ec, "", claimsWith(nil)) },
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name:       "ES384 without kid",
			token:      func(t *testing.T) string { return sign(t, jwt.SigningMethodES384, k.ec384, "", claimsWith(nil)) },
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name:       "RS256 without kid",
			token:      func(t *testing.T) string { return sign(t, jwt.SigningMethodRS256, k.rsa, "", claimsWith(nil)) },
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name: "PS512 with a kid the PEM key does not carry",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodPS512, k.rsa, "idp-key-2024", claimsWith(nil))
			},
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name:       "EdDSA",
			token:      func(t *testing.T) string { return sign(t, jwt.SigningMethodEdDSA, k.ed, "", claimsWith(nil)) },
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name: "scopes from scp array",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["scp"] = []string{ScopeCLDRead, ScopeUpgradeRead}
				}))
			},
			wantScopes: []string{ScopeCLDRead, ScopeUpgradeRead},
		},
		{
			name: "scopes from scp string",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["scp"] = "broker:write  cld:read"
				}))
			},
			wantScopes: []string{ScopeBrokerWrite, ScopeCLDRead},
		},
		{
			name: "scopes from scope string, client from client_id",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodRS256, k.rsa, "", claimsWith(func(c jwt.MapClaims) {
					delete(c, "scp")
					c["scope"] = "broker-upgrade:read broker-upgrade:write"
					c["client_id"] = "ci-pipeline"
				}))
			},
			wantScopes: []string{ScopeUpgradeRead, ScopeUpgradeWrite},
			wantClient: "ci-pipeline",
		},
		{
			name: "client from azp",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) { c["azp"] = "web" }))
			},
			wantScopes: []string{ScopeBrokerWrite},
			wantClient: "web",
		},
		{
			name: "audience list containing ours",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["aud"] = []string{"other", testAudience}
				}))
			},
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name: "expired within clock leeway",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["exp"] = now.Add(-10 * time.Second).Unix()
				}))
			},
			wantScopes: []string{ScopeBrokerWrite},
		},
		{
			name: "expired",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["exp"] = now.Add(-time.Hour).Unix()
				}))
			},
			wantErr: jwt.ErrTokenExpired,
		},
		{
			name: "exp missing",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) { delete(c, "exp") }))
			},
			wantErr: jwt.ErrTokenRequiredClaimMissing,
		},
		{
			name: "nbf in the future",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["nbf"] = now.Add(5 * time.Minute).Unix()
				}))
			},
			wantErr: jwt.ErrTokenNotValidYet,
		},
		{
			name: "iat in the future",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["iat"] = now.Add(5 * time.Minute).Unix()
				}))
			},
			wantErr: jwt.ErrTokenUsedBeforeIssued,
		},
		{
			name: "wrong issuer",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }))
			},
			wantErr: jwt.ErrTokenInvalidIssuer,
		},
		{
			name: "wrong audience",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) { c["aud"] = "someone-else" }))
			},
			wantErr: jwt.ErrTokenInvalidAudience,
		},
		{
			name: "scp of wrong type",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(func(c jwt.MapClaims) { c["scp"] = 42 }))
			},
			wantErr: jwt.ErrTokenMalformed,
		},
		{
			name: "alg none",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claimsWith(nil))
			},
			wantErr: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "HS256 keyed with the RSA public key PEM (alg confusion)",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodHS256, pemPublic(t, &k.rsa.PublicKey), "", claimsWith(nil))
			},
			wantErr: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "HS256 keyed with the EC public key PEM and its kid (alg confusion)",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodHS256, pemPublic(t, &k.ec.PublicKey), ecKID, claimsWith(nil))
			},
			wantErr: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "unknown kid, foreign key",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ecOther, "unknown-kid", claimsWith(nil))
			},
			wantErr: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "kid of our key, signed by a foreign key",
			token: func(t *testing.T) string {
				return sign(t, jwt.SigningMethodES256, k.ecOther, ecKID, claimsWith(nil))
			},
			wantErr: jwt.ErrTokenSignatureInvalid,
		},
		{
			name: "payload swapped into a valid signature",
			token: func(t *testing.T) string {
				good := strings.Split(sign(t, jwt.SigningMethodES256, k.ec, ecKID, claimsWith(nil)), ".")
				evil := strings.Split(sign(t, jwt.SigningMethodES256, k.ecOther, ecKID, claimsWith(func(c jwt.MapClaims) {
					c["scp"] = slices.Clone(allScopes)
				})), ".")
				return good[0] + "." + evil[1] + "." + good[2]
			},
			wantErr: jwt.ErrTokenSignatureInvalid,
		},
		{
			name:    "garbage",
			token:   func(*testing.T) string { return "not-a-jwt" },
			wantErr: jwt.ErrTokenMalformed,
		},
		{
			name:    "empty",
			token:   func(*testing.T) string { return "" },
			wantErr: jwt.ErrTokenMalformed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			claims, err := v.Verify(t.Context(), tt.token(t))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
				}
				if claims != nil {
					t.Fatalf("Verify returned claims with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !slices.Equal(claims.Scopes, tt.wantScopes) {
				t.Errorf("Scopes = %q, want %q", claims.Scopes, tt.wantScopes)
			}
			if claims.ClientID != tt.wantClient {
				t.Errorf("ClientID = %q, want %q", claims.ClientID, tt.wantClient)
			}
			if claims.Subject != "client-1" {
				t.Errorf("Subject = %q", claims.Subject)
			}
		})
	}
}

func TestNewVerifierConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "no key source", cfg: Config{Issuer: testIssuer}, wantErr: "no token verification key"},
		{name: "unsupported key type in code", cfg: Config{PublicKeys: []crypto.PublicKey{"secret"}}, wantErr: "unsupported public key type"},
		{name: "bad JWKS URL", cfg: Config{JWKSURLs: []string{"::not a url"}}, wantErr: "JWKS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewVerifier(t.Context(), tt.cfg, quietLogger())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewVerifier error = %v, want it to contain %q", err, tt.wantErr)
			}
			if v != nil {
				t.Fatal("NewVerifier returned a verifier with an error")
			}
		})
	}
}

func TestPEMKeyFiles(t *testing.T) {
	t.Parallel()
	k := keys()
	cert := selfSignedCert(t)
	rsaPKCS1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.rsa.PublicKey)})

	tests := []struct {
		name   string
		file   []byte
		method jwt.SigningMethod
		signer any
		kid    string
	}{
		{name: "RSA PUBLIC KEY (PKIX)", file: pemPublic(t, &k.rsa.PublicKey), method: jwt.SigningMethodRS256, signer: k.rsa},
		{name: "RSA PUBLIC KEY (PKCS#1)", file: rsaPKCS1, method: jwt.SigningMethodRS384, signer: k.rsa},
		{name: "ECDSA PUBLIC KEY", file: pemPublic(t, &k.ec.PublicKey), method: jwt.SigningMethodES256, signer: k.ec},
		{name: "ECDSA with thumbprint kid", file: pemPublic(t, &k.ec.PublicKey), method: jwt.SigningMethodES256, signer: k.ec, kid: mustThumbprint(t, &k.ec.PublicKey)},
		{name: "Ed25519 PUBLIC KEY", file: pemPublic(t, k.ed.Public()), method: jwt.SigningMethodEdDSA, signer: k.ed},
		{name: "CERTIFICATE", file: cert, method: jwt.SigningMethodES256, signer: k.ec},
		{name: "bundle, second key signs", file: append(pemPublic(t, &k.rsaOther.PublicKey), pemPublic(t, &k.ec.PublicKey)...), method: jwt.SigningMethodES256, signer: k.ec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifier(t, Config{PublicKeyFiles: []string{writeFile(t, "key.pem", tt.file)}})
			if _, err := v.Verify(t.Context(), sign(t, tt.method, tt.signer, tt.kid, claimsWith(nil))); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k.ecOther, tt.kid, claimsWith(nil))); err == nil {
				t.Fatal("token of a foreign key verified")
			}
		})
	}
}

func TestPEMKeyFileErrors(t *testing.T) {
	t.Parallel()
	privDER, err := x509.MarshalPKCS8PrivateKey(keys().ec)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    func(t *testing.T) string
		wantErr string
	}{
		{name: "missing file", path: func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope.pem") }, wantErr: "no such file"},
		{name: "not PEM", path: func(t *testing.T) string { return writeFile(t, "junk.pem", []byte("hello")) }, wantErr: "no PEM encoded public key"},
		{
			name: "private key instead of public",
			path: func(t *testing.T) string {
				return writeFile(t, "priv.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}))
			},
			wantErr: `unsupported PEM block "PRIVATE KEY"`,
		},
		{
			name: "corrupt key bytes",
			path: func(t *testing.T) string {
				return writeFile(t, "corrupt.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("garbage")}))
			},
			wantErr: "asn1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := tt.path(t)
			_, err := NewVerifier(t.Context(), Config{
				PublicKeyFiles: []string{path},
				PublicKeys:     []crypto.PublicKey{&keys().ec.PublicKey},
			}, quietLogger())
			if err == nil {
				t.Fatal("NewVerifier succeeded")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %q should name %s and contain %q", err, path, tt.wantErr)
			}
		})
	}
}

func selfSignedCert(t *testing.T) []byte {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "issuer"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &keys().ec.PublicKey, keys().ec)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// jwksServer serves a JWK Set that the test can replace to simulate rotation.
type jwksServer struct {
	*httptest.Server
	body  atomic.Pointer[[]byte]
	fetch atomic.Int64
}

func newJWKSServer(t *testing.T, keys map[string]crypto.PublicKey) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.serve(t, keys)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetch.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*s.body.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) serve(t *testing.T, keys map[string]crypto.PublicKey) {
	t.Helper()
	var set jwkset.JWKSMarshal
	for kid, key := range keys {
		jwk, err := jwkset.NewJWKFromKey(key, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid, USE: jwkset.UseSig}})
		if err != nil {
			t.Fatal(err)
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	s.body.Store(&body)
}

func TestJWKSKeyRotation(t *testing.T) {
	t.Parallel()
	k := keys()
	srv := newJWKSServer(t, map[string]crypto.PublicKey{"key-1": &k.rsa.PublicKey})
	v := newVerifier(t, Config{JWKSURLs: []string{srv.URL}, Issuer: testIssuer, Audience: testAudience})

	oldToken := sign(t, jwt.SigningMethodRS256, k.rsa, "key-1", claimsWith(nil))
	if _, err := v.Verify(t.Context(), oldToken); err != nil {
		t.Fatalf("token of the initial key: %v", err)
	}
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k.rsa, "", claimsWith(nil))); err == nil {
		t.Fatal("token without kid verified although only a JWKS is configured")
	}

	// The identity provider rotates to a new key with a new kid.
	srv.serve(t, map[string]crypto.PublicKey{"key-2": &k.ec.PublicKey})
	claims, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k.ec, "key-2", claimsWith(nil)))
	if err != nil {
		t.Fatalf("token of the rotated key: %v", err)
	}
	if !claims.HasScope(ScopeBrokerWrite) {
		t.Errorf("scopes = %q", claims.Scopes)
	}
	if _, err := v.Verify(t.Context(), oldToken); err == nil {
		t.Error("token of the removed key still verifies after the JWKS was refreshed")
	}
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, k.ecOther, "key-2", claimsWith(nil))); err == nil {
		t.Error("token signed by a foreign key with a known kid verified")
	}
}

func TestJWKSPeriodicRefreshStopsWithContext(t *testing.T) {
	t.Parallel()
	srv := newJWKSServer(t, map[string]crypto.PublicKey{"key-1": &keys().ec.PublicKey})
	ctx, cancel := context.WithCancel(t.Context())
	_, err := NewVerifier(ctx, Config{JWKSURLs: []string{srv.URL}, JWKSRefreshInterval: 20 * time.Millisecond}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.fetch.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("JWKS fetched %d times, want periodic refreshes", srv.fetch.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	time.Sleep(100 * time.Millisecond) // let an in-flight refresh finish
	before := srv.fetch.Load()
	time.Sleep(200 * time.Millisecond)
	if after := srv.fetch.Load(); after != before {
		t.Fatalf("JWKS still refreshed after ctx was cancelled (%d -> %d fetches)", before, after)
	}
}

func TestJWKSUnreachableAtStart(t *testing.T) {
	t.Parallel()
	logger, hook := logtest.NewNullLogger()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	v, err := NewVerifier(t.Context(), Config{JWKSURLs: []string{srv.URL}}, logger)
	if err != nil {
		t.Fatalf("an unreachable JWKS must not prevent start-up: %v", err)
	}
	if hook.LastEntry() == nil || hook.LastEntry().Level != logrus.WarnLevel {
		t.Errorf("want a warning about the failed JWKS fetch, got %+v", hook.AllEntries())
	}
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, keys().ec, "key-1", claimsWith(nil))); err == nil {
		t.Fatal("token verified without any key")
	}
}

func TestTrustGateway(t *testing.T) {
	t.Parallel()
	logger, hook := logtest.NewNullLogger()
	v, err := NewVerifier(t.Context(), Config{TrustGateway: true, Issuer: testIssuer, Audience: testAudience}, logger)
	if err != nil {
		t.Fatal(err)
	}
	if e := hook.LastEntry(); e == nil || e.Level != logrus.WarnLevel || !strings.Contains(e.Message, "TrustGateway") {
		t.Errorf("want a TrustGateway warning, got %+v", hook.AllEntries())
	}
	foreign := keys().rsaOther // a key keb knows nothing about: the gateway verified it

	tests := []struct {
		name    string
		token   string
		wantErr error
	}{
		{name: "token signed by an unknown key", token: sign(t, jwt.SigningMethodRS256, foreign, "gw-key", claimsWith(nil))},
		{
			name:    "expired",
			token:   sign(t, jwt.SigningMethodRS256, foreign, "", claimsWith(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() })),
			wantErr: jwt.ErrTokenExpired,
		},
		{
			name:    "nbf in the future",
			token:   sign(t, jwt.SigningMethodRS256, foreign, "", claimsWith(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() })),
			wantErr: jwt.ErrTokenNotValidYet,
		},
		{
			name:    "wrong audience",
			token:   sign(t, jwt.SigningMethodRS256, foreign, "", claimsWith(func(c jwt.MapClaims) { c["aud"] = "other" })),
			wantErr: jwt.ErrTokenInvalidAudience,
		},
		{
			name:    "alg none",
			token:   sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "", claimsWith(nil)),
			wantErr: jwt.ErrTokenSignatureInvalid,
		},
		{name: "garbage", token: "a.b", wantErr: jwt.ErrTokenMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(t.Context(), tt.token)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
			}
		})
	}

	t.Run("scopes are still enforced", func(t *testing.T) {
		t.Parallel()
		h := v.Require(ScopeUpgradeWrite)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			t.Error("handler reached without scope")
		}))
		req := httptest.NewRequest(http.MethodGet, "/upgrade", nil)
		req.Header.Set("Authorization", "Bearer "+sign(t, jwt.SigningMethodRS256, foreign, "", claimsWith(nil)))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Fatalf("status = %d, want 403", rec.Code)
		}
	})
}

// TestThumbprint checks the kid computation against RFC 7638 §3.1 and
// against jwkset's JWK encoding for the other key types.
func TestThumbprint(t *testing.T) {
	t.Parallel()
	rfcKey := `{"kty":"RSA","e":"AQAB","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"}`
	jwk, err := jwkset.NewJWKFromRawJSON(json.RawMessage(rfcKey), jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustThumbprint(t, jwk.Key()), "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"; got != want {
		t.Errorf("RFC 7638 example thumbprint = %s, want %s", got, want)
	}

	k := keys()
	tests := []struct {
		name      string
		key       crypto.PublicKey
		canonical func(m jwkset.JWKMarshal) string
	}{
		{name: "EC P-256", key: &k.ec.PublicKey, canonical: func(m jwkset.JWKMarshal) string {
			return `{"crv":"` + string(m.CRV) + `","kty":"EC","x":"` + m.X + `","y":"` + m.Y + `"}`
		}},
		{name: "EC P-384", key: &k.ec384.PublicKey, canonical: func(m jwkset.JWKMarshal) string {
			return `{"crv":"` + string(m.CRV) + `","kty":"EC","x":"` + m.X + `","y":"` + m.Y + `"}`
		}},
		{name: "Ed25519", key: k.ed.Public(), canonical: func(m jwkset.JWKMarshal) string {
			return `{"crv":"Ed25519","kty":"OKP","x":"` + m.X + `"}`
		}},
		{name: "RSA", key: &k.rsa.PublicKey, canonical: func(m jwkset.JWKMarshal) string {
			return `{"e":"` + m.E + `","kty":"RSA","n":"` + m.N + `"}`
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			jwk, err := jwkset.NewJWKFromKey(tt.key, jwkset.JWKOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(tt.canonical(jwk.Marshal())))
			if got, want := mustThumbprint(t, tt.key), base64.RawURLEncoding.EncodeToString(sum[:]); got != want {
				t.Errorf("thumbprint = %s, want %s", got, want)
			}
		})
	}
}
