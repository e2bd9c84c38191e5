package config

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
)

// UpstreamSetting is one environment variable of upstream KEB's chart (its
// broker Deployment, KEB 1.35) and what keb makes of it. An operator moving
// from upstream's chart brings these names; keb reads each that means what
// one of its own settings means as an alias of it.
type UpstreamSetting struct {
	// Name is upstream's variable.
	Name string
	// Keb is keb's variable of the same meaning, read from Name when keb's
	// own is unset; "" when keb binds Name itself (the same name) or has no
	// such setting (Note says why).
	Keb string
	// Convert turns upstream's value into keb's form (seconds into a
	// duration); nil when both take the same form.
	Convert func(string) (string, error)
	// Note says, for a setting keb does not have, what keb does instead.
	Note string
}

// The notes shared by several of upstream's settings.
const (
	noteWorkers   = "keb has one pool of workers for every kind of operation: APP_WORKERS"
	noteStepTime  = "keb bounds each wait of a step with its own timeout (APP_PROVISIONING_*_TIMEOUT, APP_DEPROVISIONING_TIMEOUT) and a whole operation with APP_BROKER_OPERATION_TIMEOUT"
	notePlansYAML = "keb reads plans, regions, machines and trial regions from its plans file (resources/plans.yaml, APP_BROKER_PLANS_FILE), in keb's own format"
	noteQuota     = "keb's quota check reads CIS through APP_CIS_ENTITLEMENTS_URL with APP_CIS_AUTH_URL and the APP_CIS_CLIENT_* credentials it shares with the subaccount cleanup"
	noteMetrics   = "keb always serves /metrics and computes its gauges every APP_METRICS_CENSUS_INTERVAL"
	noteNotKeb    = "keb has no such setting"
)

// databaseParts are upstream's database settings, which keb reads together
// as one APP_DATABASE_URL (upstreamDatabaseURL).
var databaseParts = []string{"APP_DATABASE_HOST", "APP_DATABASE_PORT", "APP_DATABASE_NAME", "APP_DATABASE_USER",
	"APP_DATABASE_PASSWORD", "APP_DATABASE_SSLMODE", "APP_DATABASE_SSLROOTCERT"}

// UpstreamSettings are the 112 variables of upstream KEB's broker
// Deployment (upstream-fidelity reference §7.2), in its order. Names keb
// binds itself (the same meaning under the same name) have neither Keb nor
// Note. This is the one table of upstream's names: Binder reads the aliases
// from it, Binder.UpstreamReport reports the rest, docs/configuration lists
// it (TestUpstreamSettingsDocumented).
var UpstreamSettings = []UpstreamSetting{
	{Name: "APP_BROKER_ACL_ENABLED_PLANS", Note: "keb offers accessControlList on the plans its plans file gives it"},
	{Name: "APP_BROKER_ADDITIONAL_VOLUME_SIZE_GI_MAX_SIZE", Note: notePlansYAML},
	{Name: "APP_BROKER_ADDITIONAL_VOLUME_SIZE_GI_PLANS", Note: notePlansYAML},
	{Name: "APP_BROKER_ALLOWED_GLOBAL_ACCOUNTS"},
	{Name: "APP_BROKER_AUDIT_LOG_ACCESS", Note: "keb offers auditLogAccess on no plan, as upstream's shipped false: paid plans accept and ignore it, trial and free refuse it; the Runtime CR contract has no audit-log field to write it to"},
	{Name: "APP_BROKER_BINDING_BINDABLE_PLANS"},
	{Name: "APP_BROKER_BINDING_CREATE_BINDING_TIMEOUT", Keb: "APP_BROKER_BINDING_TIMEOUT"},
	{Name: "APP_BROKER_BINDING_ENABLED", Note: "keb offers bindings on the plans of APP_BROKER_BINDING_BINDABLE_PLANS (with a control plane); set it empty to offer none"},
	{Name: "APP_BROKER_BINDING_EXPIRATION_SECONDS", Keb: "APP_BROKER_BINDING_EXPIRATION", Convert: seconds},
	{Name: "APP_BROKER_BINDING_MAX_BINDINGS_COUNT", Keb: "APP_BROKER_BINDING_MAX_PER_INSTANCE"},
	{Name: "APP_BROKER_BINDING_MAX_EXPIRATION_SECONDS", Keb: "APP_BROKER_BINDING_MAX_EXPIRATION", Convert: seconds},
	{Name: "APP_BROKER_BINDING_MIN_EXPIRATION_SECONDS", Keb: "APP_BROKER_BINDING_MIN_EXPIRATION", Convert: seconds},
	{Name: "APP_BROKER_CHECK_QUOTA_LIMIT"},
	{Name: "APP_BROKER_DEFAULT_REQUEST_REGION"},
	{Name: "APP_BROKER_DUAL_STACK_DOCS_URL"},
	{Name: "APP_BROKER_DYNAMIC_VOLUME_SIZE_ENABLED", Note: notePlansYAML},
	{Name: "APP_BROKER_ENABLE_PLANS", Keb: "APP_BROKER_ENABLED_PLANS"},
	{Name: "APP_BROKER_ENABLE_PLAN_UPGRADES", Note: "keb always allows the plan upgrades its plans file names (aws → build-runtime-aws, ...)"},
	{Name: "APP_BROKER_FREE_DOCS_URL", Keb: "APP_FREE_DOCS_URL"},
	{Name: "APP_BROKER_FREE_EXPIRATION_PERIOD", Keb: "APP_FREE_DURATION"},
	{Name: "APP_BROKER_GARDENER_SEEDS_CACHE_CONFIG_MAP_NAME"},
	{Name: "APP_BROKER_GVISOR_ENABLED"},
	{Name: "APP_BROKER_KCR_CONFIG_MAP_NAME", Note: noteNotKeb},
	{Name: "APP_BROKER_MONITOR_ADDITIONAL_PROPERTIES", Note: "keb counts and logs every unsupported parameter (keb_unsupported_parameters_total)"},
	{Name: "APP_BROKER_ONLY_ONE_FREE_PER_GA", Note: "keb reads onePerGlobalAccount per plan from its plans file"},
	{Name: "APP_BROKER_ONLY_SINGLE_TRIAL_PER_GA", Note: "keb reads onePerGlobalAccount per plan from its plans file"},
	{Name: "APP_BROKER_OPERATION_TIMEOUT"},
	{Name: "APP_BROKER_PORT", Keb: "APP_PORT"},
	{Name: "APP_BROKER_REJECT_UNSUPPORTED_PARAMETERS"},
	{Name: "APP_BROKER_RESTRICT_TO_ALLOWED_GLOBAL_ACCOUNTS"},
	{Name: "APP_BROKER_STATUS_PORT", Note: "keb serves /healthz, /readyz and /metrics on APP_PORT, or /metrics on APP_METRICS_ADDRESS"},
	{Name: "APP_BROKER_SUBACCOUNT_MOVEMENT_ENABLED", Keb: "APP_SUBACCOUNT_MOVEMENT_ENABLED"},
	{Name: "APP_BROKER_SYNC_EMPTY_UPDATE_RESPONSE_ENABLED", Note: noteNotKeb},
	{Name: "APP_BROKER_TRIAL_DOCS_URL", Keb: "APP_TRIAL_DOCS_URL"},
	{Name: "APP_BROKER_UPDATE_CUSTOM_RESOURCES_LABELS_ON_ACCOUNT_MOVE", Note: "keb relabels the CRs whenever it moves a subaccount (APP_SUBACCOUNT_MOVEMENT_ENABLED)"},
	{Name: "APP_BROKER_URL"},
	{Name: "APP_CATALOG_FILE_PATH", Note: "keb builds the catalog from its plans file"},
	{Name: "APP_DATABASE_HOST", Keb: "APP_DATABASE_URL"},
	{Name: "APP_DATABASE_NAME", Keb: "APP_DATABASE_URL"},
	{Name: "APP_DATABASE_PASSWORD", Keb: "APP_DATABASE_URL"},
	{Name: "APP_DATABASE_PORT", Keb: "APP_DATABASE_URL"},
	{Name: "APP_DATABASE_SECRET_KEY"},
	{Name: "APP_DATABASE_SSLMODE", Keb: "APP_DATABASE_URL"},
	{Name: "APP_DATABASE_SSLROOTCERT", Keb: "APP_DATABASE_URL"},
	{Name: "APP_DATABASE_USER", Keb: "APP_DATABASE_URL"},
	{Name: "APP_DEPROVISIONING_MAX_STEP_PROCESSING_TIME", Note: noteStepTime},
	{Name: "APP_DEPROVISIONING_WORKERS_AMOUNT", Note: noteWorkers},
	{Name: "APP_DISABLE_PROCESS_OPERATIONS_IN_PROGRESS", Note: "keb always resumes operations in progress (APP_WORKERS=0 accepts requests without driving any)"},
	{Name: "APP_DOMAIN_NAME", Note: "keb's public URL is APP_BROKER_URL"},
	{Name: "APP_EVENTS_ENABLED", Note: "keb always records events (kept APP_EVENTS_RETENTION)"},
	{Name: "APP_FREEMIUM_WHITELISTED_GLOBAL_ACCOUNTS_FILE_PATH", Note: noteNotKeb},
	{Name: "APP_GARDENER_KUBECONFIG_PATH"},
	{Name: "APP_GARDENER_PROJECT"},
	{Name: "APP_GARDENER_SHOOT_DOMAIN", Keb: "APP_SHOOT_DOMAIN"},
	{Name: "APP_GVISOR_WHITELISTED_GLOBAL_ACCOUNTS_FILE_PATH", Note: "keb lists them in APP_GVISOR_ALLOWED_GLOBAL_ACCOUNTS, not in a file"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_ALLOWED_GLOBAL_ACCOUNTS"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_ALICLOUD"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_AWS"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_AZURE"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_DEFAULT"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_GCP"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_GDCH", Note: "keb has no gdch limit of its own: APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_DEFAULT applies"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_OPENSTACK"},
	{Name: "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_MIN_BINDINGS_FOR_GUARD", Note: noteNotKeb},
	{Name: "APP_HAP_RULE_FILE_PATH"},
	{Name: "APP_INFRASTRUCTURE_MANAGER_CONTROL_PLANE_FAILURE_TOLERANCE"},
	{Name: "APP_INFRASTRUCTURE_MANAGER_DEFAULT_GARDENER_SHOOT_PURPOSE", Note: notePlansYAML},
	{Name: "APP_INFRASTRUCTURE_MANAGER_DEFAULT_TRIAL_PROVIDER", Note: notePlansYAML},
	{Name: "APP_INFRASTRUCTURE_MANAGER_INGRESS_FILTERING_PLANS", Note: notePlansYAML},
	{Name: "APP_INFRASTRUCTURE_MANAGER_KUBERNETES_VERSION"},
	{Name: "APP_INFRASTRUCTURE_MANAGER_MACHINE_IMAGE"},
	{Name: "APP_INFRASTRUCTURE_MANAGER_MACHINE_IMAGE_VERSION"},
	{Name: "APP_INFRASTRUCTURE_MANAGER_MAX_PODS"},
	{Name: "APP_INFRASTRUCTURE_MANAGER_MULTI_ZONE_CLUSTER", Note: notePlansYAML},
	{Name: "APP_INFRASTRUCTURE_MANAGER_USE_SMALLER_MACHINE_TYPES"},
	{Name: "APP_KUBECONFIG_ALLOW_ORIGINS"},
	{Name: "APP_KYMA_DASHBOARD_CONFIG_LANDSCAPE_URL", Note: noteNotKeb},
	{Name: "APP_MACHINES_AVAILABILITY_ENDPOINT", Note: noteNotKeb},
	{Name: "APP_MAX_PODS_WHITELISTED_GLOBAL_ACCOUNTS_FILE_PATH", Note: noteNotKeb},
	{Name: "APP_METRICS_AVAILABLE_CREDENTIALS_BINDINGS_POLLING_INTERVAL", Note: noteMetrics},
	{Name: "APP_METRICS_CREDENTIALS_BINDINGS_POLLING_INTERVAL", Note: noteMetrics},
	{Name: "APP_METRICS_ENABLED", Note: noteMetrics},
	{Name: "APP_METRICS_OPERATION_RESULT_FINISHED_OPERATION_RETENTION_PERIOD", Note: noteMetrics},
	{Name: "APP_METRICS_OPERATION_RESULT_POLLING_INTERVAL", Note: noteMetrics},
	{Name: "APP_METRICS_OPERATION_RESULT_RETENTION_PERIOD", Note: noteMetrics},
	{Name: "APP_METRICS_OPERATION_STATS_POLLING_INTERVAL", Note: noteMetrics},
	{Name: "APP_OPEN_SHELL_WHITELISTED_GLOBAL_ACCOUNTS_FILE_PATH", Note: noteNotKeb},
	{Name: "APP_OPERATION_BLOCKLIST_FILE_PATH", Keb: "APP_OPERATION_BLOCKLIST_FILE"},
	{Name: "APP_OPERATION_RECOVERY_DELAY", Note: noteNotKeb},
	{Name: "APP_PLANS_CONFIGURATION_FILE_PATH", Note: notePlansYAML},
	{Name: "APP_PROFILER_MEMORY", Note: "keb serves Go's profiles on APP_PPROF_ADDR"},
	{Name: "APP_PROVIDERS_CONFIGURATION_FILE_PATH", Note: notePlansYAML},
	{Name: "APP_PROVISIONING_MAX_STEP_PROCESSING_TIME", Note: noteStepTime},
	{Name: "APP_PROVISIONING_WORKERS_AMOUNT", Note: noteWorkers},
	{Name: "APP_QUOTA_AUTH_URL", Note: noteQuota},
	{Name: "APP_QUOTA_CLIENT_ID", Note: noteQuota},
	{Name: "APP_QUOTA_CLIENT_SECRET", Note: noteQuota},
	{Name: "APP_QUOTA_INTERVAL", Note: noteQuota},
	{Name: "APP_QUOTA_RETRIES", Note: noteQuota},
	{Name: "APP_QUOTA_SERVICE_URL", Note: noteQuota},
	{Name: "APP_QUOTA_WHITELISTED_SUBACCOUNTS_FILE_PATH", Note: noteQuota},
	{Name: "APP_RUNTIME_CONFIGURATION_CONFIG_MAP_NAME", Note: "keb reads overrides from ConfigMaps and Secrets labelled provisioning-runtime-override"},
	{Name: "APP_SKR_DNS_PROVIDERS_VALUES_YAML_FILE_PATH", Note: noteNotKeb},
	{Name: "APP_SKR_OIDC_DEFAULT_VALUES_YAML_FILE_PATH", Keb: "APP_BROKER_OIDC_DEFAULT_FILE"},
	{Name: "APP_STEP_TIMEOUTS_CHECK_RUNTIME_RESOURCE_CREATE", Keb: "APP_PROVISIONING_RUNTIME_TIMEOUT"},
	{Name: "APP_STEP_TIMEOUTS_CHECK_RUNTIME_RESOURCE_DELETION", Keb: "APP_DEPROVISIONING_TIMEOUT"},
	{Name: "APP_STEP_TIMEOUTS_CHECK_RUNTIME_RESOURCE_UPDATE", Note: noteStepTime},
	{Name: "APP_TRIAL_REGION_MAPPING_FILE_PATH", Note: notePlansYAML},
	{Name: "APP_UPDATE_MAX_STEP_PROCESSING_TIME", Note: noteStepTime},
	{Name: "APP_UPDATE_PROCESSING_ENABLED", Note: "keb always processes updates"},
	{Name: "APP_UPDATE_WORKERS_AMOUNT", Note: noteWorkers},
	{Name: "APP_USE_HAP_FOR_DEPROVISIONING", Note: "keb always releases the account the instance's HAP rule chose"},
}

// seconds turns upstream's number of seconds into a Go duration.
func seconds(v string) (string, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return "", fmt.Errorf("%q is not a number of seconds", v)
	}
	return strconv.Itoa(n) + "s", nil
}

// UpstreamNote is one line of what keb made of upstream's settings at
// start, for keb serve to log.
type UpstreamNote struct {
	// Upstream is upstream's variable; Keb keb's, "" for one keb lacks.
	Upstream, Keb string
	// Outcome is what keb did: read, overridden (keb's own name is set
	// too, and wins) or unsupported.
	Outcome UpstreamOutcome
	// Note says, for an unsupported one, what keb does instead.
	Note string
}

// UpstreamOutcome is what keb did with one of upstream's variables.
type UpstreamOutcome string

// What keb did with upstream's variables.
const (
	UpstreamRead        UpstreamOutcome = "read"
	UpstreamOverridden  UpstreamOutcome = "overridden"
	UpstreamUnsupported UpstreamOutcome = "unsupported"
)

// lookup is os.LookupEnv of keb's variable env, or, when it is unset, of
// upstream's alias of it, converted to keb's form. It notes which alias it
// read, and which it did not because keb's own name is set.
func (b *Binder) lookup(env string) (string, bool) {
	v, ok := os.LookupEnv(env)
	for _, s := range UpstreamSettings {
		if s.Keb != env || slices.Contains(databaseParts, s.Name) {
			continue
		}
		uv, set := os.LookupEnv(s.Name)
		if !set {
			continue
		}
		if ok {
			b.noteUpstream(UpstreamNote{Upstream: s.Name, Keb: env, Outcome: UpstreamOverridden})
			continue
		}
		if s.Convert != nil {
			c, err := s.Convert(uv)
			if err != nil {
				b.errs = append(b.errs, fmt.Errorf("%s (upstream's name for %s): %w", s.Name, env, err))
				continue
			}
			uv = c
		}
		b.noteUpstream(UpstreamNote{Upstream: s.Name, Keb: env, Outcome: UpstreamRead})
		v, ok = uv, true
	}
	return v, ok
}

// IsSet says whether keb's variable env, or one of upstream's names for it,
// is in the environment: what a caller that defaults a setting on its own
// (keb dev's plans) must check before it does.
func IsSet(env string) bool {
	if _, ok := os.LookupEnv(env); ok {
		return true
	}
	for _, s := range UpstreamSettings {
		if s.Keb == env {
			if _, ok := os.LookupEnv(s.Name); ok {
				return true
			}
		}
	}
	return false
}

func (b *Binder) noteUpstream(n UpstreamNote) {
	if !slices.Contains(b.upstream, n) {
		b.upstream = append(b.upstream, n)
	}
}

// upstreamDatabaseURL is the PostgreSQL URL upstream's database settings
// (APP_DATABASE_HOST, _PORT, _NAME, _USER, _PASSWORD, _SSLMODE,
// _SSLROOTCERT) describe, and the ones set; "" when none is.
func upstreamDatabaseURL() (string, []string) {
	var set []string
	for _, name := range databaseParts {
		if _, ok := os.LookupEnv(name); ok {
			set = append(set, name)
		}
	}
	if len(set) == 0 {
		return "", nil
	}
	u := url.URL{Scheme: "postgres", Host: os.Getenv("APP_DATABASE_HOST"), Path: "/" + os.Getenv("APP_DATABASE_NAME")}
	if p := os.Getenv("APP_DATABASE_PORT"); p != "" {
		u.Host += ":" + p
	}
	if user := os.Getenv("APP_DATABASE_USER"); user != "" {
		if pw, ok := os.LookupEnv("APP_DATABASE_PASSWORD"); ok {
			u.User = url.UserPassword(user, pw)
		} else {
			u.User = url.User(user)
		}
	}
	q := url.Values{}
	if m := os.Getenv("APP_DATABASE_SSLMODE"); m != "" {
		q.Set("sslmode", m)
	}
	if c := os.Getenv("APP_DATABASE_SSLROOTCERT"); c != "" {
		q.Set("sslrootcert", c)
	}
	u.RawQuery = q.Encode()
	return u.String(), set
}

// UpstreamReport is what keb made of the environment's variables of
// upstream KEB's chart: the aliases it read, those keb's own names
// overrode, and those whose meaning keb does not have (set, but neither
// bound by keb under the same name nor an alias). Call it after binding
// every setting.
func (b *Binder) UpstreamReport() []UpstreamNote {
	out := slices.Clone(b.upstream)
	for _, s := range UpstreamSettings {
		if s.Keb != "" || slices.Contains(b.envs, s.Name) {
			continue
		}
		if _, set := os.LookupEnv(s.Name); set {
			out = append(out, UpstreamNote{Upstream: s.Name, Outcome: UpstreamUnsupported, Note: s.Note})
		}
	}
	return out
}

// Message is the note as keb serve logs it.
func (n UpstreamNote) Message() string {
	switch n.Outcome {
	case UpstreamRead:
		return fmt.Sprintf("read upstream KEB's %s as %s", n.Upstream, n.Keb)
	case UpstreamOverridden:
		return fmt.Sprintf("ignored upstream KEB's %s: keb's own %s is set too, and wins", n.Upstream, n.Keb)
	}
	if n.Note == "" || n.Note == noteNotKeb {
		return fmt.Sprintf("ignored upstream KEB's %s: keb has no setting of that meaning", n.Upstream)
	}
	return fmt.Sprintf("ignored upstream KEB's %s: keb has no setting of that meaning; %s", n.Upstream, n.Note)
}
