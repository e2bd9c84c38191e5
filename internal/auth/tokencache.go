package auth

import (
	"crypto/sha256"
	"time"
	"unsafe"

	lru "github.com/hashicorp/golang-lru/v2"
)

const (
	// tokenCacheSize bounds the verified-token cache. A platform polls with
	// one token for many requests, so a few thousand distinct tokens cover
	// every caller; a flood of distinct tokens only evicts, it never grows
	// memory past this bound (about 1 KiB per entry).
	tokenCacheSize = 4096
	// tokenCacheMaxAge bounds how long one verification is reused even when
	// the token lives longer, so claims are re-read and the key re-checked
	// at least this often.
	//
	// Revocation: a JWT cannot be revoked (keb has no introspection endpoint
	// to ask, and never had); it is valid until its exp. What can be
	// withdrawn is a signing key: a cached token whose JWKS key is no longer
	// served under its kid is verified again (and rejected) on its next use,
	// so the cache honours a key rotation exactly when the JWKS refresh sees
	// it, as keb did without the cache. Static keys (PEM files, `keb dev`)
	// only change with a restart, which empties the cache.
	tokenCacheMaxAge = time.Minute
)

// verifiedToken is a token whose signature and claims were checked.
type verifiedToken struct {
	claims *Claims
	// jwksKey is the JWKS key that verified it, checked again on reuse.
	jwksKey jwksKey
	// until is when the verification stops being reused: the token's exp
	// (without the clock leeway, so a cached token is never honoured longer
	// than a strict check would) or tokenCacheMaxAge after verification.
	until time.Time
}

// tokenCache remembers verified tokens by the SHA-256 of the raw token, so
// that the signature of a token is checked once per tokenCacheMaxAge, not on
// every request. Only successes are cached: a rejected token is verified
// again on its next use, which keeps errors exact (e.g. a token used before
// its nbf becomes valid on time).
type tokenCache struct {
	entries *lru.Cache[[sha256.Size]byte, verifiedToken]
	now     func() time.Time
}

func newTokenCache() *tokenCache {
	c, err := lru.New[[sha256.Size]byte, verifiedToken](tokenCacheSize)
	if err != nil {
		// Only a non-positive size fails.
		panic(err)
	}
	return &tokenCache{entries: c, now: time.Now}
}

// get returns a token verified before and still within its validity; its
// claims are shared and must not be modified.
func (c *tokenCache) get(rawToken string) (verifiedToken, bool) {
	key := tokenKey(rawToken)
	e, ok := c.entries.Get(key)
	if !ok {
		return verifiedToken{}, false
	}
	if !c.now().Before(e.until) {
		c.entries.Remove(key)
		return verifiedToken{}, false
	}
	return e, true
}

// put remembers a token that was just verified.
func (c *tokenCache) put(rawToken string, claims *Claims, key jwksKey) {
	now := c.now()
	until := now.Add(tokenCacheMaxAge)
	if claims.ExpiresAt != nil && claims.ExpiresAt.Before(until) {
		until = claims.ExpiresAt.Time
	}
	if !now.Before(until) {
		return // accepted only thanks to the clock leeway: never reuse it
	}
	c.entries.Add(tokenKey(rawToken), verifiedToken{claims: claims, jwksKey: key, until: until})
}

// tokenKey is the cache's key of a token: its SHA-256, hashed from the
// string's own bytes. []byte(rawToken) copied the token (about 600 bytes)
// to the heap on every authenticated request; the hash only reads them.
func tokenKey(rawToken string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(rawToken), len(rawToken)))
}
