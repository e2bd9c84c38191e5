package config

import (
	"errors"

	"github.com/kyma-keb/keb/internal/director"
)

// BindDirector binds the Director integration's settings (APP_DIRECTOR_*,
// upstream's names). It is off unless APP_DIRECTOR_URL is set (upstream had
// no switch and a default URL).
func (c *Config) BindDirector(b *Binder) {
	d := &c.Director
	b.String(&d.URL, "director-url", "APP_DIRECTOR_URL", "",
		"the Director's GraphQL URL; set, provisioning checks each runtime's dashboard URL there (empty: no Director)")
	b.String(&d.OAuthTokenURL, "director-oauth-token-url", "APP_DIRECTOR_OAUTH_TOKEN_URL", "", "the Director's token URL (client credentials)")
	b.String(&d.OAuthClientID, "director-oauth-client-id", "APP_DIRECTOR_OAUTH_CLIENT_ID", "", "the Director's OAuth client ID")
	b.String(&d.OAuthClientSecret, "director-oauth-client-secret", "APP_DIRECTOR_OAUTH_CLIENT_SECRET", "", "the Director's OAuth client secret")
	b.String(&d.OAuthScope, "director-oauth-scope", "APP_DIRECTOR_OAUTH_SCOPE", "runtime:read runtime:write", "scopes of the Director's tokens")
}

// validateDirector checks the Director settings once it is configured.
func validateDirector(d director.Config) error {
	if !d.Configured() {
		return nil
	}
	errs := httpURLs(map[string]string{"APP_DIRECTOR_URL": d.URL, "APP_DIRECTOR_OAUTH_TOKEN_URL": d.OAuthTokenURL})
	if d.OAuthClientID == "" {
		errs = append(errs, errors.New("the Director needs APP_DIRECTOR_OAUTH_CLIENT_ID"))
	}
	return errors.Join(errs...)
}
