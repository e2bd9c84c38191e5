package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"

	"github.com/kyma-keb/keb/internal/avs"
)

// Int64 binds an int64 flag.
func (b *Binder) Int64(p *int64, name, env string, def int64, help string) {
	if v, ok := os.LookupEnv(env); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s=%q: not an integer", env, v))
		} else {
			def = n
		}
	}
	b.fs.Int64Var(p, name, def, b.usage(help, env))
}

// BindAVS binds the AVS integration's settings (APP_AVS_*, upstream's
// names). It is off unless APP_AVS_API_ENDPOINT is set.
func (c *Config) BindAVS(b *Binder) {
	a := &c.AVS
	b.String(&a.APIEndpoint, "avs-api-endpoint", "APP_AVS_API_ENDPOINT", "",
		"AVS evaluation API base URL; set, provisioning creates an internal and an external evaluation per runtime and deprovisioning removes them (empty: no AVS)")
	b.String(&a.OAuthTokenEndpoint, "avs-oauth-token-endpoint", "APP_AVS_OAUTH_TOKEN_ENDPOINT", "",
		"AVS token URL (OAuth2 password grant, a token per call)")
	b.String(&a.OAuthUsername, "avs-oauth-username", "APP_AVS_OAUTH_USERNAME", "", "AVS user")
	b.String(&a.OAuthPassword, "avs-oauth-password", "APP_AVS_OAUTH_PASSWORD", "", "AVS user's password")
	b.String(&a.OAuthClientID, "avs-oauth-client-id", "APP_AVS_OAUTH_CLIENT_ID", "", "AVS OAuth client ID (HTTP Basic, no secret)")
	b.Bool(&a.Disabled, "avs-disabled", "APP_AVS_DISABLED", false,
		"create no evaluations (deprovisioning still removes those created before)")
	b.Bool(&a.ExternalTesterDisabled, "avs-external-tester-disabled", "APP_AVS_EXTERNAL_TESTER_DISABLED", false,
		"create no external evaluation")
	b.Int64(&a.InternalTesterAccessID, "avs-internal-tester-access-id", "APP_AVS_INTERNAL_TESTER_ACCESS_ID", 0, "internal evaluations' tester_access_id")
	b.Int64(&a.ExternalTesterAccessID, "avs-external-tester-access-id", "APP_AVS_EXTERNAL_TESTER_ACCESS_ID", 0, "external evaluations' tester_access_id")
	b.Int64(&a.GroupID, "avs-group-id", "APP_AVS_GROUP_ID", 0, "evaluations' group_id")
	b.Int64(&a.ParentID, "avs-parent-id", "APP_AVS_PARENT_ID", 0, "evaluations' parent evaluation")
	b.String(&a.InternalTesterService, "avs-internal-tester-service", "APP_AVS_INTERNAL_TESTER_SERVICE", "",
		"internal evaluations' service (empty: the evaluation's name)")
	b.String(&a.ExternalTesterService, "avs-external-tester-service", "APP_AVS_EXTERNAL_TESTER_SERVICE", "",
		"external evaluations' service (empty: the evaluation's name)")
	b.Int64(&a.TrialInternalTesterAccessID, "avs-trial-internal-tester-access-id", "APP_AVS_TRIAL_INTERNAL_TESTER_ACCESS_ID", 0,
		"trial and free runtimes' internal tester_access_id (used when the three APP_AVS_TRIAL_* are set)")
	b.Int64(&a.TrialGroupID, "avs-trial-group-id", "APP_AVS_TRIAL_GROUP_ID", 0, "trial and free runtimes' internal group_id")
	b.Int64(&a.TrialParentID, "avs-trial-parent-id", "APP_AVS_TRIAL_PARENT_ID", 0, "trial and free runtimes' internal parent evaluation")
	b.Bool(&a.MaintenanceDuringUpgradeDisabled, "avs-maintenance-mode-during-upgrade-disabled",
		"APP_AVS_MAINTENANCE_MODE_DURING_UPGRADE_DISABLED", false,
		"leave the evaluations active during cluster upgrades (default: MAINTENANCE while the upgrade runs)")
	b.String(&a.MaintenanceExemptionsFile, "avs-maintenance-mode-always-disabled-global-accounts-file",
		"APP_AVS_MAINTENANCE_MODE_DURING_UPGRADE_ALWAYS_DISABLED_GLOBAL_ACCOUNTS_FILE_PATH", "",
		"YAML file (maintenanceModeDuringUpgradeAlwaysDisabledGAIDs: [global account IDs]) of global accounts whose runtimes' evaluations stay active during upgrades; read at start")
	t := &a.TagClasses
	for _, tc := range []struct {
		p          *int64
		name, what string
	}{{&t.InstanceID, "INSTANCE_ID", "instance ID"}, {&t.GlobalAccountID, "GLOBAL_ACCOUNT_ID", "global account ID"},
		{&t.SubAccountID, "SUB_ACCOUNT_ID", "subaccount ID"}, {&t.Landscape, "LANDSCAPE", "platform region"},
		{&t.Provider, "PROVIDER", "provider"}, {&t.Region, "REGION", "region"}, {&t.ShootName, "SHOOT_NAME", "shoot name"}} {
		b.Int64(tc.p, "avs-"+flagName(tc.name)+"-tag-class-id", "APP_AVS_"+tc.name+"_TAG_CLASS_ID", 0,
			"tag class ID of the evaluations' "+tc.what+" tag")
	}
}

func flagName(env string) string {
	out := []byte(env)
	for i, ch := range out {
		switch {
		case ch == '_':
			out[i] = '-'
		case ch >= 'A' && ch <= 'Z':
			out[i] = ch - 'A' + 'a'
		}
	}
	return string(out)
}

// validateAVS checks the AVS settings once AVS is configured.
func validateAVS(a avs.Config) error {
	if !a.Configured() {
		return nil
	}
	errs := httpURLs(map[string]string{"APP_AVS_API_ENDPOINT": a.APIEndpoint, "APP_AVS_OAUTH_TOKEN_ENDPOINT": a.OAuthTokenEndpoint})
	if _, err := avs.ReadMaintenanceExemptions(a.MaintenanceExemptionsFile); err != nil {
		errs = append(errs, fmt.Errorf("APP_AVS_MAINTENANCE_MODE_DURING_UPGRADE_ALWAYS_DISABLED_GLOBAL_ACCOUNTS_FILE_PATH: %w", err))
	}
	if a.OAuthClientID == "" || a.OAuthUsername == "" {
		errs = append(errs, errors.New("AVS needs APP_AVS_OAUTH_CLIENT_ID and APP_AVS_OAUTH_USERNAME"))
	}
	if a.Provisions() && (a.InternalTesterAccessID == 0 || a.GroupID == 0 || a.ParentID == 0 ||
		(!a.ExternalTesterDisabled && a.ExternalTesterAccessID == 0)) {
		errs = append(errs, errors.New("AVS needs APP_AVS_INTERNAL_TESTER_ACCESS_ID, APP_AVS_GROUP_ID and APP_AVS_PARENT_ID (and APP_AVS_EXTERNAL_TESTER_ACCESS_ID unless APP_AVS_EXTERNAL_TESTER_DISABLED)"))
	}
	return errors.Join(errs...)
}

// httpURLs checks that each setting (by variable) is an absolute http(s)
// URL, as the integrations' endpoints must be.
func httpURLs(settings map[string]string) []error {
	var errs []error
	for env, v := range settings {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s=%q: want an http(s) URL", env, v))
		}
	}
	return errs
}
