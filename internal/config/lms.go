package config

import (
	"errors"

	"github.com/kyma-keb/keb/internal/lms"
)

// BindLMS binds the LMS integration's settings (APP_LMS_*, upstream's
// names and code defaults). It is off unless APP_LMS_URL is set.
func (c *Config) BindLMS(b *Binder) {
	l := &c.LMS
	b.String(&l.URL, "lms-url", "APP_LMS_URL", "",
		"LMS API base URL; set, provisioning gets each runtime's global account a logging tenant and the runtime's Fluent Bit a certificate of it (empty: no LMS)")
	b.String(&l.Token, "lms-token", "APP_LMS_TOKEN", "", "LMS API token (the X-LMS-Token header)")
	b.String(&l.ClusterType, "lms-cluster-type", "APP_LMS_CLUSTER_TYPE", lms.ClusterTypeSingleNode,
		"new LMS tenants' cluster type: ha or single-node")
	b.String(&l.Environment, "lms-environment", "APP_LMS_ENVIRONMENT", "dev", "new LMS tenants' environment")
	b.String(&l.SAMLTenant, "lms-saml-tenant", "APP_LMS_SAML_TENANT", "", "new LMS tenants' SAML tenant")
	b.String(&l.Region, "lms-region", "APP_LMS_REGION", "",
		"LMS region of every tenant (empty: mapped from the runtime's region: eu, us or aus)")
	b.Bool(&l.Mandatory, "lms-mandatory", "APP_LMS_MANDATORY", true,
		"LMS refusing, or a tenant or certificate not ready in time, fails the provisioning (false: skipped with a recorded warning)")
	b.String(&l.EnabledForGlobalAccounts, "lms-enabled-for-global-accounts", "APP_LMS_ENABLED_FOR_GLOBAL_ACCOUNTS", "all",
		"global accounts whose runtimes get LMS: all, none, or a comma list (trial runtimes never do)")
}

// validateLMS checks the LMS settings once LMS is enabled.
func validateLMS(l lms.Config) error {
	if !l.Enabled() {
		return nil
	}
	errs := httpURLs(map[string]string{"APP_LMS_URL": l.URL})
	if l.Token == "" || l.Environment == "" {
		errs = append(errs, errors.New("LMS needs APP_LMS_TOKEN and APP_LMS_ENVIRONMENT"))
	}
	if l.ClusterType != lms.ClusterTypeHA && l.ClusterType != lms.ClusterTypeSingleNode {
		errs = append(errs, errors.New("APP_LMS_CLUSTER_TYPE must be ha or single-node"))
	}
	return errors.Join(errs...)
}
