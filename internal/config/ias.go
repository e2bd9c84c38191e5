package config

import (
	"errors"

	"github.com/kyma-keb/keb/internal/ias"
)

// BindIAS binds the IAS integration's settings (APP_IAS_*, upstream's
// names). It is off unless APP_IAS_URL is set (upstream's chart had it
// disabled).
func (c *Config) BindIAS(b *Binder) {
	i := &c.IAS
	b.String(&i.URL, "ias-url", "APP_IAS_URL", "",
		"IAS tenant URL; set, provisioning registers each runtime's Grafana there as an OpenID Connect service provider and deprovisioning removes it (empty: no IAS)")
	b.String(&i.UserID, "ias-user-id", "APP_IAS_USER_ID", "", "IAS API user (HTTP Basic)")
	b.String(&i.UserSecret, "ias-user-secret", "APP_IAS_USER_SECRET", "", "IAS API user's password")
	b.String(&i.IdentityProvider, "ias-identity-provider", "APP_IAS_IDENTITY_PROVIDER", "",
		"name of the corporate identity provider set as each service provider's default")
	b.Bool(&i.Disabled, "ias-disabled", "APP_IAS_DISABLED", false, "register nothing in IAS although APP_IAS_URL is set")
	b.Bool(&i.SkipCertVerification, "ias-skip-cert-verification", "APP_IAS_SKIP_CERT_VERIFICATION", false,
		"trust any TLS certificate of the IAS tenant (a test tenant's)")
	b.Bool(&i.TLSRenegotiation, "ias-tls-renegotiation-enable", "APP_IAS_TLS_RENEGOTIATION_ENABLE", false,
		"let the IAS tenant renegotiate TLS once per connection (calls then time out after 30 s instead of 60 s)")
}

// validateIAS checks the IAS settings once IAS is enabled.
func validateIAS(i ias.Config) error {
	if !i.Enabled() {
		return nil
	}
	errs := httpURLs(map[string]string{"APP_IAS_URL": i.URL})
	if i.UserID == "" || i.UserSecret == "" || i.IdentityProvider == "" {
		errs = append(errs, errors.New("IAS needs APP_IAS_USER_ID, APP_IAS_USER_SECRET and APP_IAS_IDENTITY_PROVIDER"))
	}
	return errors.Join(errs...)
}
