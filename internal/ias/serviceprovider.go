package ias

// What a runtime's service provider is: Grafana's, as upstream's only kind.
const (
	// CompanyID is the company every call names.
	CompanyID = "global"
	// RedirectPath is Grafana's generic OAuth callback.
	RedirectPath = "/login/generic_oauth"
	// SSOType is the service provider's single sign-on protocol.
	SSOType = "openIdConnect"
	// NameIDAttribute is the subject's name ID.
	NameIDAttribute = "mail"
	// SecretDescription describes the generated client secrets.
	SecretDescription = "SAP Kyma Runtime Secret"
	// GroupAdmin and GroupViewer are the groups allowed in.
	GroupAdmin  = "skr-monitoring-admin"
	GroupViewer = "skr-monitoring-viewer"
	// GroupType is the access rules' group type.
	GroupType = "Cloud"
	// OverridesComponent is the Kyma component Grafana's OAuth client
	// overrides belong to; OverrideClientID and OverrideClientSecret are
	// their keys.
	OverridesComponent   = "monitoring"
	OverrideClientID     = "grafana.env.GF_AUTH_GENERIC_OAUTH_CLIENT_ID"
	OverrideClientSecret = "grafana.env.GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET"
)

// SecretScopes are the generated client secrets' scopes.
var SecretScopes = []string{"ManageApp", "ManageUsers", "OAuth"}

// DisplayName is the service provider's name for instanceID's runtime,
// by which it is found again: IAS knows no other key of keb's.
func DisplayName(instanceID string) string { return "SKR Grafana (instanceID: " + instanceID + ")" }

// GrafanaHost is the runtime's Grafana host, its console's with grafana.
// for console.
func GrafanaHost(domain string) string { return "grafana." + domain }

// Company is what GET /service/company/global answers, reduced to what keb
// reads.
type Company struct {
	ServiceProviders  []ServiceProvider  `json:"service_providers"`
	IdentityProviders []IdentityProvider `json:"identity_providers"`
}

// ServiceProvider is one of the company's service providers.
type ServiceProvider struct {
	ID                  string               `json:"id"`
	DisplayName         string               `json:"display_name"`
	AssertionAttributes []AssertionAttribute `json:"assertion_attributes"`
	ClientSecrets       []ClientSecret       `json:"clientSecrets"`
	// UserForRest is the client ID of the service provider's secrets.
	UserForRest string `json:"userForRest"`
}

// IdentityProvider is one of the company's identity providers.
type IdentityProvider struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ClientSecret is a service provider's client secret, as listed.
type ClientSecret struct {
	ID string `json:"clientSecretId"`
}

// AssertionAttribute maps a user attribute into the tokens.
type AssertionAttribute struct {
	AssertionAttribute string `json:"assertionAttribute"`
	UserAttribute      string `json:"userAttribute"`
}

// ServiceProvider finds the service provider named displayName.
func (c Company) ServiceProvider(displayName string) (ServiceProvider, bool) {
	for _, sp := range c.ServiceProviders {
		if sp.DisplayName == displayName {
			return sp, true
		}
	}
	return ServiceProvider{}, false
}

// IdentityProvider finds the identity provider named name.
func (c Company) IdentityProvider(name string) (IdentityProvider, bool) {
	for _, idp := range c.IdentityProviders {
		if idp.Name == name {
			return idp, true
		}
	}
	return IdentityProvider{}, false
}

// defaultAttributes are the four assertion attributes a service provider
// gets.
var defaultAttributes = []AssertionAttribute{
	{AssertionAttribute: "first_name", UserAttribute: "firstName"},
	{AssertionAttribute: "last_name", UserAttribute: "lastName"},
	{AssertionAttribute: "email", UserAttribute: "mail"},
	{AssertionAttribute: "groups", UserAttribute: "companyGroups"},
}

// Attributes are the four assertion attributes for sp: a value sp has for
// one of their keys is kept (an operator may have changed it), its other
// keys are dropped, as upstream did.
func (sp ServiceProvider) Attributes() []AssertionAttribute {
	out := make([]AssertionAttribute, len(defaultAttributes))
	for i, a := range defaultAttributes {
		out[i] = a
		for _, have := range sp.AssertionAttributes {
			if have.AssertionAttribute == a.AssertionAttribute && have.UserAttribute != "" {
				out[i].UserAttribute = have.UserAttribute
			}
		}
	}
	return out
}

// SecretIDs are the IDs of sp's client secrets.
func (sp ServiceProvider) SecretIDs() []string {
	ids := make([]string, 0, len(sp.ClientSecrets))
	for _, s := range sp.ClientSecrets {
		ids = append(ids, s.ID)
	}
	return ids
}

// Credentials are a generated client secret.
type Credentials struct {
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
}

// Record is what keb registered in IAS for a runtime, kept in the
// provisioning operation's record (JSON key "ias"); the secret itself is
// only in the runtime's overrides Secret, never in the database.
type Record struct {
	// ServiceProviderID and ClientID name the service provider and the
	// client of its secret.
	ServiceProviderID string `json:"serviceProviderId"`
	ClientID          string `json:"clientId"`
}
