package auth

import (
	"context"
	"crypto"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// FuzzVerify feeds arbitrary bearer tokens to the verifier. Whatever the
// input, it must not panic, and it may accept only a token signed by the
// trusted key: the seed corpus holds one, every mutation of its signature
// or header must fail.
func FuzzVerify(f *testing.F) {
	key, err := LoadOrCreateDevKey(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	v, err := NewVerifier(context.Background(), Config{PublicKeys: []crypto.PublicKey{key.Public()},
		Issuer: testIssuer, Audience: testAudience}, log)
	if err != nil {
		f.Fatal(err)
	}
	valid, err := key.Mint(testIssuer, testAudience, "fuzz", []string{ScopeBrokerWrite}, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Fuzz(func(t *testing.T, token string) {
		claims, err := v.Verify(t.Context(), token)
		if err != nil {
			return
		}
		if token != valid {
			// Only the signed token may pass; a re-encoding of it (other
			// base64 padding, say) must still carry its signature.
			if strings.Count(token, ".") != 2 {
				t.Fatalf("accepted a token without three segments: %q", token)
			}
		}
		if claims == nil || !claims.HasScope(ScopeBrokerWrite) {
			t.Fatalf("accepted %q with claims %+v", token, claims)
		}
	})
}
