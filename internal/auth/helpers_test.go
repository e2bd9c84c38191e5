package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

const (
	testIssuer   = "https://issuer.example"
	testAudience = "keb"
)

// testKeys are generated once because RSA generation is slow on small CI machines.
type testKeys struct {
	rsa, rsaOther *rsa.PrivateKey
	ec, ecOther   *ecdsa.PrivateKey
	ec384         *ecdsa.PrivateKey
	ed            ed25519.PrivateKey
}

var keys = sync.OnceValue(func() testKeys {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	var k testKeys
	var err error
	k.rsa, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	k.rsaOther, err = rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	k.ecOther, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	k.ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	must(err)
	_, k.ed, err = ed25519.GenerateKey(rand.Reader)
	must(err)
	return k
})

// claimsWith returns valid claims for testIssuer/testAudience, changed by mutate.
func claimsWith(mutate func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"iss": testIssuer,
		"aud": testAudience,
		"sub": "client-1",
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
		"scp": []string{ScopeBrokerWrite},
	}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func sign(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.Claims) string {
	t.Helper()
	token := jwt.NewWithClaims(method, claims)
	if kid != "" {
		token.Header["kid"] = kid
	}
	s, err := token.SignedString(key)
	if err != nil {
		t.Fatalf("signing test token: %v", err)
	}
	return s
}

func mustThumbprint(t *testing.T, key crypto.PublicKey) string {
	t.Helper()
	kid, err := thumbprint(key)
	if err != nil {
		t.Fatal(err)
	}
	return kid
}

func newVerifier(t *testing.T, cfg Config) *Verifier {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := NewVerifier(ctx, cfg, quietLogger())
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

func quietLogger() logrus.FieldLogger {
	l, _ := logtest.NewNullLogger()
	return l
}

func pemPublic(t *testing.T, key crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
