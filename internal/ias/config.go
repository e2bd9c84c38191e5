// Package ias is keb's client of SAP Cloud Identity Services - Identity
// Authentication (IAS): each runtime's Grafana gets an OpenID Connect
// service provider in the company's tenant, restricted to two groups, with
// a client secret for Grafana's generic OAuth. The wire contract is
// upstream KEB's, as it last had it (provisioning 2021-11, deregistration
// 2024-06; ../shared/reference/integrations.md §5).
package ias

// Config is the APP_IAS_* settings group. The integration is off unless
// URL is set.
type Config struct {
	// URL is the tenant's base URL (https://<tenant>.accounts.ondemand.com).
	URL string
	// UserID and UserSecret are the HTTP Basic credentials of the API.
	UserID, UserSecret string
	// IdentityProvider is the name of the corporate identity provider set
	// as each service provider's default authenticating one.
	IdentityProvider string
	// Disabled takes the steps out although URL is set.
	Disabled bool
	// SkipCertVerification trusts any certificate of the tenant (a test
	// tenant's self-signed one).
	SkipCertVerification bool
	// TLSRenegotiation lets the tenant renegotiate TLS once per
	// connection, which some tenants ask for; calls then time out after
	// 30 s instead of 60 s, as upstream's.
	TLSRenegotiation bool
}

// Enabled reports whether keb registers runtimes in IAS.
func (c Config) Enabled() bool { return c.URL != "" && !c.Disabled }
