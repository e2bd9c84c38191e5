package catalog

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// requiredClaimPattern is one entry of an OIDC provider's requiredClaims: key=value.
const requiredClaimPattern = "^[^=]+=.*$"

// oidcProviderProperties are the fields of one OIDC provider; a listed provider must name its
// signing algorithms.
func oidcProviderProperties(listed bool) properties {
	var p properties
	p.add("clientID", map[string]any{
		"type": "string", "title": "Client ID", "minLength": 1,
		"description": "Client ID of the OpenID Connect client.",
	})
	p.add("issuerURL", map[string]any{
		"type": "string", "title": "Issuer URL", "format": "uri", "pattern": httpsPattern,
		"description": "URL of the OpenID issuer; only https is accepted.",
	})
	p.add("groupsClaim", map[string]any{
		"type": "string", "title": "Groups claim",
		"description": "JWT claim holding the user's groups.",
	})
	p.add("groupsPrefix", map[string]any{
		"type": "string", "title": "Groups prefix",
		"description": "Prefix added to group names, to tell them from other authenticators' groups.",
	})
	algs := map[string]any{
		"type": "array", "title": "Signing algorithms", "uniqueItems": true,
		"description": "Accepted signing algorithms.",
		"items":       map[string]any{"type": "string", "enum": OIDCSigningAlgs},
	}
	if listed {
		algs["minItems"] = 1
	}
	p.add("signingAlgs", algs)
	p.add("usernameClaim", map[string]any{
		"type": "string", "title": "Username claim",
		"description": "JWT claim holding the user name.",
	})
	p.add("usernamePrefix", map[string]any{
		"type": "string", "title": "Username prefix",
		"description": "Prefix added to user names, to tell them from other authenticators' users.",
	})
	p.add("requiredClaims", map[string]any{
		"type": "array", "title": "Required claims",
		"description": "Claims every token must carry, as key=value.",
		"items":       map[string]any{"type": "string", "pattern": requiredClaimPattern},
	})
	p.add("encodedJwksArray", map[string]any{
		"type": "string", "title": "Encoded JWKS",
		"description": "The issuer's JSON Web Key Set, base64-encoded.",
	})
	return p
}

// oidcSchema accepts the legacy single provider or {"list": [...]}; ValidateParameters refuses
// both at once and asks the legacy form for clientID and issuerURL.
func oidcSchema() map[string]any {
	item := oidcProviderProperties(true)
	p := oidcProviderProperties(false)
	p.add("list", map[string]any{
		"type": "array", "title": "OIDC providers",
		"description": "Every OpenID Connect provider the API server trusts; an empty list means none.",
		"items":       item.object(map[string]any{"required": []string{"clientID", "issuerURL", "signingAlgs"}}),
	})
	return p.object(map[string]any{
		"title":       "OIDC",
		"description": "OpenID Connect configuration of the cluster's API server: one provider, or a list of them.",
	})
}

// oidcProblems checks what the schema cannot: one form only, the legacy form complete, issuer
// URLs that are plain https URLs and JWKS that are base64.
func oidcProblems(o *OIDC) []FieldProblem {
	if o == nil {
		return nil
	}
	var problems []FieldProblem
	legacy, list, listForm := o.Providers()
	if listForm {
		if !o.OIDCProvider.empty() {
			problems = append(problems, FieldProblem{Field: paramOIDC,
				Message: "must use either list or the single-provider fields (clientID, issuerURL, ...), not both"})
		}
		for i, p := range list {
			problems = append(problems, p.problems(fmt.Sprintf("oidc.list[%d]", i))...)
		}
		return problems
	}
	for _, f := range []struct{ name, value string }{{"clientID", legacy.ClientID}, {"issuerURL", legacy.IssuerURL}} {
		if f.value == "" {
			problems = append(problems, FieldProblem{Field: "oidc." + f.name, Message: "is required"})
		}
	}
	return append(problems, legacy.problems("oidc")...)
}

func (p OIDCProvider) empty() bool {
	return p.ClientID == "" && p.IssuerURL == "" && p.GroupsClaim == "" && p.GroupsPrefix == "" && p.SigningAlgs == nil &&
		p.UsernameClaim == "" && p.UsernamePrefix == "" && p.RequiredClaims == nil && p.EncodedJwksArray == ""
}

func (p OIDCProvider) problems(field string) []FieldProblem {
	var problems []FieldProblem
	if p.IssuerURL != "" {
		u, err := url.Parse(p.IssuerURL)
		switch {
		case err != nil || u.Scheme != "https" || u.Hostname() == "":
			problems = append(problems, FieldProblem{Field: field + ".issuerURL", Message: "must be an https:// URL with a host"})
		case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || u.RawFragment != "":
			problems = append(problems, FieldProblem{Field: field + ".issuerURL", Message: "must not carry user info, a query or a fragment"})
		}
	}
	seen := map[string]int{}
	for i, c := range p.RequiredClaims {
		key, _, _ := strings.Cut(c, "=")
		if first, dup := seen[key]; dup {
			problems = append(problems, FieldProblem{Field: fmt.Sprintf("%s.requiredClaims[%d]", field, i),
				Message: fmt.Sprintf("repeats the claim %q of requiredClaims[%d]: a claim can require one value only", key, first)})
			continue
		}
		seen[key] = i
	}
	if p.EncodedJwksArray != "" {
		if _, err := base64.StdEncoding.DecodeString(p.EncodedJwksArray); err != nil {
			problems = append(problems, FieldProblem{Field: field + ".encodedJwksArray", Message: "must be base64 (standard encoding)"})
		}
	}
	return problems
}
