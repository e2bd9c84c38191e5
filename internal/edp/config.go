// Package edp is keb's client of the Event Data Platform (EDP): each
// subaccount with a runtime is a data tenant in keb's EDP namespace, with
// four metadata entries that metering and billing (MaaS) read. The wire
// contract is upstream KEB's, as it last had it (1.21.21,
// ../shared/reference/integrations.md §6).
package edp

// Config is the APP_EDP_* settings group. The integration is off unless
// AdminURL is set.
type Config struct {
	// AuthURL is the base of the token endpoint (<AuthURL>/oauth2/token).
	AuthURL string
	// AdminURL is the base of the admin API.
	AdminURL string
	// Namespace is keb's EDP namespace; the client ID is
	// "edp-namespace;<Namespace>".
	Namespace string
	// Secret is the client secret.
	Secret string
	// Environment is the data tenants' environment.
	Environment string
	// Required makes EDP's failures fail provisioning (and updates);
	// otherwise they are skipped with a recorded warning.
	Required bool
	// Disabled takes the steps out although AdminURL is set.
	Disabled bool
}

// Enabled reports whether keb registers subaccounts in EDP.
func (c Config) Enabled() bool { return c.AdminURL != "" && !c.Disabled }
