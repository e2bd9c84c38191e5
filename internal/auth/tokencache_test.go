package auth

import (
	"crypto"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestTokenCacheHonoursExpiryAndMaxAge(t *testing.T) {
	t.Parallel()
	start := time.Now()
	now := start
	c := newTokenCache()
	c.now = func() time.Time { return now }

	shortLived := &Claims{RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(start.Add(10 * time.Second))}}
	longLived := &Claims{RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(start.Add(time.Hour))}}
	c.put("short", shortLived, jwksKey{})
	c.put("long", longLived, jwksKey{})

	now = start.Add(5 * time.Second)
	if e, ok := c.get("short"); !ok || e.claims != shortLived {
		t.Fatalf("token within its exp not served from the cache: %v", ok)
	}
	now = shortLived.ExpiresAt.Time
	if _, ok := c.get("short"); ok {
		t.Error("token served from the cache at its exp")
	}
	now = start.Add(tokenCacheMaxAge - time.Second)
	if _, ok := c.get("long"); !ok {
		t.Error("long-lived token not served from the cache within the maximum age")
	}
	now = start.Add(tokenCacheMaxAge)
	if _, ok := c.get("long"); ok {
		t.Error("long-lived token served from the cache after the maximum age")
	}

	// A token past its exp (accepted only within the clock leeway) is never cached.
	c.put("leeway", &Claims{RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(now.Add(-time.Second))}}, jwksKey{})
	if _, ok := c.get("leeway"); ok {
		t.Error("token past its exp was cached")
	}
}

func TestTokenCacheIsBounded(t *testing.T) {
	t.Parallel()
	c := newTokenCache()
	claims := &Claims{RegisteredClaims: jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}}
	for i := range tokenCacheSize + 100 {
		c.put(fmt.Sprintf("token-%d", i), claims, jwksKey{})
	}
	if n := c.entries.Len(); n != tokenCacheSize {
		t.Errorf("cache holds %d tokens, want the bound %d", n, tokenCacheSize)
	}
	if _, ok := c.get("token-0"); ok {
		t.Error("the oldest token was not evicted")
	}
	if _, ok := c.get(fmt.Sprintf("token-%d", tokenCacheSize+99)); !ok {
		t.Error("the newest token was evicted")
	}
}

func TestVerifyReusesVerificationOnlyForTheSameToken(t *testing.T) {
	t.Parallel()
	k := keys()
	v := newVerifier(t, Config{PublicKeys: []crypto.PublicKey{&k.ec.PublicKey}, Issuer: testIssuer, Audience: testAudience})
	token := sign(t, jwt.SigningMethodES256, k.ec, "", claimsWith(nil))

	first, err := v.Verify(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	second, err := v.Verify(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Error("the second use of a verified token was verified again instead of served from the cache")
	}

	// Same header and claims, another key's signature: the cache is keyed by
	// the whole token, so the forgery is verified, and rejected.
	forged := sign(t, jwt.SigningMethodES256, k.ecOther, "", claimsWith(nil))
	signed := token[:strings.LastIndex(token, ".")]
	forgedSig := forged[strings.LastIndex(forged, "."):]
	if _, err := v.Verify(t.Context(), signed+forgedSig); err == nil {
		t.Error("a token with a foreign signature verified after the genuine one was cached")
	}
}
