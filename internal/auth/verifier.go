package auth

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"
)

// Config says where verification keys come from and what claims must hold.
type Config struct {
	// JWKSURLs are cached and refreshed every JWKSRefreshInterval and, rate
	// limited, whenever a token names an unknown kid, so the identity provider
	// can rotate keys without a keb restart.
	JWKSURLs []string
	// PublicKeyFiles are PEM files with RSA, ECDSA or Ed25519 public keys
	// ("PUBLIC KEY", "RSA PUBLIC KEY" or "CERTIFICATE" blocks).
	PublicKeyFiles []string
	// PublicKeys are keys given in code (used by `keb dev`).
	PublicKeys []crypto.PublicKey
	// Issuer, if non-empty, must equal the `iss` claim.
	Issuer string
	// Audience, if non-empty, must be contained in the `aud` claim.
	Audience string
	// TrustGateway skips signature verification because an upstream gateway
	// already verified the token; time claims, issuer, audience and scopes are
	// still checked.
	TrustGateway bool
	// JWKSRefreshInterval defaults to 15 minutes.
	JWKSRefreshInterval time.Duration
}

const (
	defaultJWKSRefresh = 15 * time.Minute
	// clockLeeway tolerates clock skew between the token issuer and keb.
	clockLeeway = 30 * time.Second
	// unknownKIDRefresh bounds how often a token with an unknown kid may make
	// keb refetch the JWKS, so random kids cannot hammer the identity provider.
	unknownKIDRefresh = 10 * time.Second
	// unknownKIDWait bounds how long a request waits for that refetch; when the
	// rate limit would make it wait longer the token is rejected at once.
	unknownKIDWait = 5 * time.Second
)

// acceptedAlgs excludes HS* (a public key must never become an HMAC secret)
// and "none".
var acceptedAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Verifier validates bearer tokens. It is safe for concurrent use.
type Verifier struct {
	static       []staticKey
	jwks         keyfunc.Keyfunc // nil without JWKS URLs
	parser       *jwt.Parser
	validator    *jwt.Validator // used alone in TrustGateway mode
	trustGateway bool
	log          logrus.FieldLogger
	// verified spares repeated requests with one token (a platform polling
	// last_operation) the signature check; see tokenCache.
	verified *tokenCache
	onReject func(reason string)
}

// NewVerifier loads the static keys and starts the JWKS refresh goroutines,
// which stop when ctx is done.
func NewVerifier(ctx context.Context, cfg Config, log logrus.FieldLogger) (*Verifier, error) {
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = l
	}
	v := &Verifier{trustGateway: cfg.TrustGateway, log: log, verified: newTokenCache()}

	for _, path := range cfg.PublicKeyFiles {
		keys, err := loadPEMKeys(path)
		if err != nil {
			return nil, err
		}
		v.static = append(v.static, keys...)
	}
	for i, key := range cfg.PublicKeys {
		sk, err := newStaticKey(key)
		if err != nil {
			return nil, fmt.Errorf("public key #%d: %w", i, err)
		}
		v.static = append(v.static, sk)
	}

	opts := []jwt.ParserOption{
		jwt.WithValidMethods(acceptedAlgs),
		jwt.WithLeeway(clockLeeway),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	v.validator = jwt.NewValidator(opts...)

	if cfg.TrustGateway {
		// Keys are still loaded above so that a broken configuration is
		// reported, but no JWKS needs to be fetched.
		log.Warn("auth: TrustGateway is enabled, bearer token signatures are NOT verified by keb; " +
			"only use this behind a gateway that verifies every token")
		return v, nil
	}
	if len(cfg.JWKSURLs) == 0 && len(v.static) == 0 {
		return nil, errors.New("auth: no token verification key configured (set JWKS URLs, public key files or public keys, or enable TrustGateway)")
	}
	if len(cfg.JWKSURLs) > 0 {
		interval := cfg.JWKSRefreshInterval
		if interval <= 0 {
			interval = defaultJWKSRefresh
		}
		jwks, err := keyfunc.NewDefaultOverrideCtx(ctx, cfg.JWKSURLs, keyfunc.Override{
			RefreshInterval:   interval,
			RefreshUnknownKID: rate.NewLimiter(rate.Every(unknownKIDRefresh), 1),
			RateLimitWaitMax:  unknownKIDWait,
			// The first fetch may fail (identity provider not up yet); keb
			// still starts and the refreshes will pick the keys up later.
			RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
				return func(_ context.Context, err error) {
					log.WithError(err).WithField("url", u).Warn("auth: fetching JWKS failed")
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("setting up JWKS %v: %w", cfg.JWKSURLs, err)
		}
		v.jwks = jwks
	}
	return v, nil
}

// Verify checks the token's signature (unless TrustGateway) and claims. A
// token verified within the last minute and not yet expired is answered from
// a bounded cache (tokenCache) as long as the JWKS still holds the key that
// verified it; the returned claims must not be modified.
func (v *Verifier) Verify(ctx context.Context, rawToken string) (*Claims, error) {
	if e, ok := v.verified.get(rawToken); ok && v.jwksStillHas(ctx, e.jwksKey) {
		return e.claims, nil
	}
	claims, key, err := v.verify(ctx, rawToken)
	if err != nil {
		return nil, err
	}
	v.verified.put(rawToken, claims, key)
	return claims, nil
}

// jwksStillHas reports whether the JWKS still serves key under its kid (a
// cached token whose key was rotated out is verified again, and rejected).
// Static keys (zero jwksKey) never change while keb runs.
func (v *Verifier) jwksStillHas(ctx context.Context, key jwksKey) bool {
	if key.kid == "" {
		return true
	}
	jwk, err := v.jwks.Storage().KeyRead(ctx, key.kid)
	if err != nil {
		return false
	}
	pub, ok := jwk.Key().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(key.key)
}

// jwksKey is the JWKS key that verified a token; zero for static keys and in
// TrustGateway mode.
type jwksKey struct {
	kid string
	key crypto.PublicKey
}

func (v *Verifier) verify(ctx context.Context, rawToken string) (*Claims, jwksKey, error) {
	claims := &Claims{}
	if v.trustGateway {
		token, _, err := v.parser.ParseUnverified(rawToken, claims)
		if err != nil {
			return nil, jwksKey{}, err
		}
		if err := checkCritical(token); err != nil {
			return nil, jwksKey{}, err
		}
		// Even a gateway never lets "none" or HS* tokens through, so anything
		// else indicates a bypassed gateway.
		if !slices.Contains(acceptedAlgs, token.Method.Alg()) {
			return nil, jwksKey{}, fmt.Errorf("%w: signing method %s is invalid", jwt.ErrTokenSignatureInvalid, token.Method.Alg())
		}
		if err := v.validator.Validate(claims); err != nil {
			return nil, jwksKey{}, fmt.Errorf("%w: %w", jwt.ErrTokenInvalidClaims, err)
		}
		return claims, jwksKey{}, nil
	}
	var used jwksKey
	if _, err := v.parser.ParseWithClaims(rawToken, claims, v.keyFunc(ctx, &used)); err != nil {
		return nil, jwksKey{}, err
	}
	return claims, used, nil
}

// keyFunc selects the verification key: a static key whose thumbprint equals
// the kid, then the JWKS, then every static key of the token's key family
// (PEM files carry no kid, so issuers may use any kid for them).
// A key taken from the JWKS is recorded in *fromJWKS.
func (v *Verifier) keyFunc(ctx context.Context, fromJWKS *jwksKey) jwt.Keyfunc {
	return func(token *jwt.Token) (any, error) {
		if err := checkCritical(token); err != nil {
			return nil, err
		}
		kid, _ := token.Header["kid"].(string)
		if kid != "" {
			for _, sk := range v.static {
				if sk.kid == kid {
					return sk.key, nil
				}
			}
			if v.jwks != nil {
				key, err := v.jwks.KeyfuncCtx(ctx)(token)
				if err == nil {
					*fromJWKS = jwksKey{kid: kid, key: key}
					return key, nil
				}
				// The detailed reason may name the JWKS URL; keep it in the log.
				v.log.WithError(err).WithField("kid", kid).Debug("auth: no JWKS key for token")
			}
		}
		var set jwt.VerificationKeySet
		for _, sk := range v.static {
			if fitsAlg(sk.key, token.Method.Alg()) {
				set.Keys = append(set.Keys, sk.key)
			}
		}
		if len(set.Keys) > 0 {
			return set, nil
		}
		if kid == "" {
			return nil, fmt.Errorf("%w: token has no kid and no static %s key is configured", errNoKey, token.Method.Alg())
		}
		return nil, fmt.Errorf("%w: unknown kid %q", errNoKey, kid)
	}
}

// errCritical refuses a token whose header lists critical extensions
// (crit): RFC 7515 §4.1.11 demands that a recipient not understanding one
// rejects the token, and keb understands none.
var errCritical = errors.New("the token names critical header extensions (crit), which keb does not understand")

func checkCritical(token *jwt.Token) error {
	if _, ok := token.Header["crit"]; ok {
		return errCritical
	}
	return nil
}
