package config

import (
	"errors"

	"github.com/kyma-keb/keb/internal/edp"
)

// DefaultEDPNamespace is keb's EDP namespace unless APP_EDP_NAMESPACE says otherwise.
const DefaultEDPNamespace = "kyma-dev"

// BindEDP binds the EDP integration's settings (APP_EDP_*, upstream's
// names). It is off unless APP_EDP_ADMIN_URL is set.
func (c *Config) BindEDP(b *Binder) {
	e := &c.EDP
	b.String(&e.AdminURL, "edp-admin-url", "APP_EDP_ADMIN_URL", "",
		"EDP admin API base URL; set, provisioning registers each runtime's subaccount as an EDP data tenant and deprovisioning removes it (empty: no EDP)")
	b.String(&e.AuthURL, "edp-auth-url", "APP_EDP_AUTH_URL", "", "base of EDP's token endpoint (<url>/oauth2/token, client credentials)")
	b.String(&e.Namespace, "edp-namespace", "APP_EDP_NAMESPACE", DefaultEDPNamespace, "keb's EDP namespace (client ID edp-namespace;<namespace>)")
	b.String(&e.Secret, "edp-secret", "APP_EDP_SECRET", "", "EDP client secret")
	b.String(&e.Environment, "edp-environment", "APP_EDP_ENVIRONMENT", "prod", "the data tenants' environment")
	b.Bool(&e.Required, "edp-required", "APP_EDP_REQUIRED", false,
		"EDP's failures fail provisionings and updates (false: the step is skipped with a recorded warning)")
	b.Bool(&e.Disabled, "edp-disabled", "APP_EDP_DISABLED", false, "register nothing in EDP although APP_EDP_ADMIN_URL is set")
}

// validateEDP checks the EDP settings once EDP is enabled.
func validateEDP(e edp.Config) error {
	if !e.Enabled() {
		return nil
	}
	errs := httpURLs(map[string]string{"APP_EDP_ADMIN_URL": e.AdminURL, "APP_EDP_AUTH_URL": e.AuthURL})
	if e.Namespace == "" || e.Environment == "" || e.Secret == "" {
		errs = append(errs, errors.New("EDP needs APP_EDP_NAMESPACE, APP_EDP_ENVIRONMENT and APP_EDP_SECRET"))
	}
	return errors.Join(errs...)
}
