// Package auth authorises keb's HTTP requests with OAuth2 bearer JWTs and
// provides the development-only signing key and token endpoint of `keb dev`.
package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Scopes understood by keb's endpoints.
const (
	ScopeBrokerWrite  = "broker:write"
	ScopeCLDRead      = "cld:read"
	ScopeUpgradeRead  = "broker-upgrade:read"
	ScopeUpgradeWrite = "broker-upgrade:write"
	// ScopeKubeconfigRead lets a caller fetch people's kubeconfigs
	// (GET /kubeconfig/{instance_id}): the platform's proxy holds it.
	ScopeKubeconfigRead = "kubeconfig:read"
)

// allScopes is what the dev token endpoint grants when no scope is requested.
var allScopes = []string{ScopeBrokerWrite, ScopeCLDRead, ScopeUpgradeRead, ScopeUpgradeWrite, ScopeKubeconfigRead}

// Claims are the claims keb reads from an access token.
//
// Identity providers disagree on how scopes are encoded (Hydra/Ory use a `scp`
// array, Keycloak and RFC 8693 a space-separated `scope` string, some send
// `scp` as a string), so UnmarshalJSON accepts all of these forms.
type Claims struct {
	jwt.RegisteredClaims
	Scopes   []string `json:"scp,omitempty"`
	ClientID string   `json:"client_id,omitempty"`
}

// HasScope reports whether the token grants scope.
func (c *Claims) HasScope(scope string) bool {
	return c != nil && slices.Contains(c.Scopes, scope)
}

// UnmarshalJSON decodes the registered claims plus the scope and client
// claims in their various spellings. The time claims must be JSON numbers
// (RFC 7519's NumericDate): the jwt library would read "exp": "9999999999",
// a string, as a time.
func (c *Claims) UnmarshalJSON(data []byte) error {
	var times struct {
		Exp json.RawMessage `json:"exp"`
		Nbf json.RawMessage `json:"nbf"`
		Iat json.RawMessage `json:"iat"`
	}
	if err := json.Unmarshal(data, &times); err != nil {
		return err
	}
	for name, raw := range map[string]json.RawMessage{"exp": times.Exp, "nbf": times.Nbf, "iat": times.Iat} {
		if raw = bytes.TrimSpace(raw); len(raw) > 0 && raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return fmt.Errorf("claim %s must be a number of seconds (RFC 7519 NumericDate), not %.20s", name, raw)
		}
	}
	var reg jwt.RegisteredClaims
	if err := json.Unmarshal(data, &reg); err != nil {
		return err
	}
	var extra struct {
		Scp      json.RawMessage `json:"scp"`
		Scope    json.RawMessage `json:"scope"`
		ClientID string          `json:"client_id"`
		AZP      string          `json:"azp"`
	}
	if err := json.Unmarshal(data, &extra); err != nil {
		return err
	}
	scp, err := parseScopes(extra.Scp)
	if err != nil {
		return fmt.Errorf("claim scp: %w", err)
	}
	scope, err := parseScopes(extra.Scope)
	if err != nil {
		return fmt.Errorf("claim scope: %w", err)
	}
	// Both claims come from the same signed token, so merging them is safe.
	var scopes []string
	for _, s := range append(scp, scope...) {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	clientID := extra.ClientID
	if clientID == "" {
		clientID = extra.AZP // OIDC's authorized party, what Keycloak and Azure AD send
	}
	*c = Claims{RegisteredClaims: reg, Scopes: scopes, ClientID: clientID}
	return nil
}

// parseScopes accepts a space-separated string or an array of strings.
func parseScopes(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return strings.Fields(s), nil
	case '[':
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("must be an array of strings: %w", err)
		}
		var out []string
		for _, s := range list {
			out = append(out, strings.Fields(s)...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("must be a string or an array of strings")
}

type claimsKey struct{}

// ClaimsFromContext returns the claims that Require stored for the request.
// They may be shared with other requests carrying the same token (the
// verified-token cache), so they must not be modified.
func ClaimsFromContext(ctx context.Context) (*Claims, bool) {
	c, ok := ctx.Value(claimsKey{}).(*Claims)
	return c, ok && c != nil
}
