package catalog

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// requiredClaimPattern is one entry of an OIDC provider's requiredClaims: key=value.
const requiredClaimPattern = "^[^=]+=.*$"

// oidcFieldOrder is upstream's order of an OIDC provider's fields in the form.
var oidcFieldOrder = []string{"clientID", "groupsClaim", "issuerURL", "signingAlgs", "usernameClaim", "usernamePrefix", "groupsPrefix",
	"requiredClaims", "encodedJwksArray"}

// oidcProviderProperties are the fields of one OIDC provider, in upstream's order; a listed
// provider must name its signing algorithms. def holds the defaults the form shows (a zero def:
// none); readOnly, when not nil, is written into every field as upstream does for its object form.
func oidcProviderProperties(listed bool, def OIDCProvider, readOnly *bool) properties {
	field := func(s map[string]any, value string) map[string]any {
		if value != "" {
			s["default"] = value
		}
		if readOnly != nil {
			s["readOnly"] = *readOnly
		}
		return s
	}
	fields := map[string]map[string]any{
		"clientID": field(map[string]any{
			"type": "string", "title": "Client ID", "minLength": 1,
			"description": "Client ID of the OpenID Connect client.",
		}, ""),
		"issuerURL": field(map[string]any{
			"type": "string", "title": "Issuer URL", "format": "uri", "pattern": httpsPattern,
			"description": "URL of the OpenID issuer; only https is accepted.",
		}, ""),
		"groupsClaim": field(map[string]any{
			"type": "string", "title": "Groups claim",
			"description": "JWT claim holding the user's groups.",
		}, def.GroupsClaim),
		"groupsPrefix": field(map[string]any{
			"type": "string", "title": "Groups prefix",
			"description": "Prefix added to group names, to tell them from other authenticators' groups.",
		}, def.GroupsPrefix),
		"usernameClaim": field(map[string]any{
			"type": "string", "title": "Username claim",
			"description": "JWT claim holding the user name.",
		}, def.UsernameClaim),
		"usernamePrefix": field(map[string]any{
			"type": "string", "title": "Username prefix",
			"description": "Prefix added to user names, to tell them from other authenticators' users.",
		}, def.UsernamePrefix),
		"requiredClaims": field(map[string]any{
			"type": "array", "title": "Required claims",
			"description": "Claims every token must carry, as key=value.",
			"items":       map[string]any{"type": "string", "pattern": requiredClaimPattern},
		}, ""),
		"encodedJwksArray": field(map[string]any{
			"type": "string", "title": "Encoded JWKS",
			"description": "The issuer's JSON Web Key Set, base64-encoded.",
		}, ""),
	}
	algs := field(map[string]any{
		"type": "array", "title": "Signing algorithms", "uniqueItems": true,
		"description": "Accepted signing algorithms.",
		"items":       map[string]any{"type": "string", "enum": OIDCSigningAlgs},
	}, "")
	if len(def.SigningAlgs) > 0 {
		algs["default"] = def.SigningAlgs
	}
	if listed {
		algs["minItems"] = 1
	}
	fields["signingAlgs"] = algs
	var p properties
	for _, name := range oidcFieldOrder {
		p.add(name, fields[name])
	}
	return p
}

// formEntry is a provider as the form's list shows it: every field present.
func (p OIDCProvider) formEntry() map[string]any {
	algs, claims := p.SigningAlgs, p.RequiredClaims
	if algs == nil {
		algs = []string{}
	}
	if claims == nil {
		claims = []string{}
	}
	return map[string]any{
		"clientID": p.ClientID, "issuerURL": p.IssuerURL, "groupsClaim": p.GroupsClaim, "signingAlgs": algs,
		"usernameClaim": p.UsernameClaim, "usernamePrefix": p.UsernamePrefix, "groupsPrefix": p.GroupsPrefix,
		"requiredClaims": claims, "encodedJwksArray": p.EncodedJwksArray,
	}
}

// oidcSchema is upstream's choice between a list of providers (the recommended form; create
// offers the default provider in it, update an empty entry, since the cockpit loads the current
// configuration) and the legacy single provider, read-only in the create form as upstream has it.
// The branches tell each other apart by their keys: the list form requires "list" (so {} is the
// legacy form) and both refuse the other's keys. ValidateParameters asks the legacy form for
// clientID and issuerURL unless it is {}, which upstream takes for the default OIDC on create and
// for no change on update.
func oidcSchema(create bool, def OIDCProvider) map[string]any {
	entryDefault := OIDCProvider{}
	if create {
		entryDefault = def
	}
	item := oidcProviderProperties(true, entryDefault, nil)
	var list properties
	list.add("list", map[string]any{
		"type": "array", "title": "OIDC providers", "uniqueItems": true,
		"description": "Every OpenID Connect provider the API server trusts; an empty list means none.",
		"default":     []any{entryDefault.formEntry()},
		"items":       item.object(map[string]any{"required": []string{"clientID", "issuerURL", "signingAlgs"}}),
	})
	readOnly := create
	legacy := oidcProviderProperties(false, OIDCProvider{}, &readOnly)
	return map[string]any{
		"type":           "object",
		"title":          "OIDC",
		"description":    "OpenID Connect configuration of the cluster's API server: a list of providers, or one provider (not recommended).",
		"_controlsOrder": append([]string{"list"}, oidcFieldOrder...),
		"oneOf": []any{
			list.object(map[string]any{"title": "List", "required": []string{"list"}}),
			legacy.object(map[string]any{"title": "Object (not recommended)"}),
		},
	}
}

// oidcFormProblems refuses, before the schema does less clearly, an oidc parameter that mixes the
// list with the single-provider fields.
func oidcFormProblems(doc map[string]any) []FieldProblem {
	o, ok := doc[paramOIDC].(map[string]any)
	if !ok {
		return nil
	}
	if _, list := o["list"]; !list {
		return nil
	}
	for _, k := range oidcFieldOrder {
		if _, ok := o[k]; ok {
			return []FieldProblem{{Field: paramOIDC, Message: "must use either list or the single-provider fields (clientID, issuerURL, ...), not both"}}
		}
	}
	return nil
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
	if legacy == nil {
		// {}: upstream's default OIDC (create) or no change (update).
		return nil
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
