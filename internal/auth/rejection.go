package auth

import (
	"errors"

	"github.com/golang-jwt/jwt/v5"
)

// Reasons a request is refused, as RejectionObserver receives them. They are
// metric label values: a closed set, never free text from a token.
const (
	RejectMissingToken      = "missing_token"
	RejectMalformedHeader   = "malformed_header"
	RejectMalformedToken    = "malformed_token"
	RejectExpired           = "expired"
	RejectNotYetValid       = "not_yet_valid"
	RejectUnknownKey        = "unknown_key"
	RejectBadSignature      = "bad_signature"
	RejectWrongIssuer       = "wrong_issuer"
	RejectWrongAudience     = "wrong_audience"
	RejectInvalidClaims     = "invalid_claims"
	RejectInsufficientScope = "insufficient_scope"
)

// RejectionReasons lists every reason, so counters can start at zero.
var RejectionReasons = []string{RejectMissingToken, RejectMalformedHeader, RejectMalformedToken, RejectExpired,
	RejectNotYetValid, RejectUnknownKey, RejectBadSignature, RejectWrongIssuer, RejectWrongAudience,
	RejectInvalidClaims, RejectInsufficientScope}

// rejectionReason classifies a Verify error. The order matters: jwt joins a
// specific error (expired) with the general one (invalid claims).
func rejectionReason(err error) string {
	switch {
	case errors.Is(err, errCritical):
		return RejectMalformedToken
	case errors.Is(err, errNoKey), errors.Is(err, jwt.ErrTokenUnverifiable):
		return RejectUnknownKey
	case errors.Is(err, jwt.ErrTokenExpired):
		return RejectExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return RejectNotYetValid
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return RejectWrongIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return RejectWrongAudience
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return RejectBadSignature
	case errors.Is(err, jwt.ErrTokenMalformed):
		return RejectMalformedToken
	default:
		return RejectInvalidClaims
	}
}
