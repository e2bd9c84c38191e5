// Package config reads keb's settings from APP_* environment variables and
// command-line flags. Every setting is a flag whose default comes from its
// environment variable, so `keb <cmd> --help` is the configuration reference.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/director"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/guardrails"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/seeds"
)

// Config is everything `keb serve` and `keb dev` need.
type Config struct {
	Host string
	Port int

	DatabaseURL             string
	DatabaseMaxConns        int
	DatabaseSecretKey       string
	DatabaseSecretKeysPrior []string
	MigrateOnStart          bool

	DefaultRequestRegion string
	EnabledPlans         []string
	PlansFile            string
	// SeedsConfigMap names the ConfigMap in kcp-system listing the regions with a Gardener seed
	// per provider (colocateControlPlane), as upstream's gardenerSeedsCache.
	SeedsConfigMap string
	// OIDCDefaultFile replaces resources/oidc.yaml, the runtimes' default OIDC provider.
	OIDCDefaultFile string
	// UseSmallerMachineTypes gives trial and free runtimes the plans'
	// smallerMachineTypes (upstream's useSmallerMachineTypes).
	UseSmallerMachineTypes bool
	// RejectUnsupportedParameters refuses parameters no plan schema names
	// (400); false ignores them, logging and counting each.
	RejectUnsupportedParameters bool
	// DualStackDocsURL is the page the networking.dualStack description
	// links to (upstream's broker.dualStackDocsURL).
	DualStackDocsURL string
	// GVisorEnabled puts gvisor into the plans' forms (upstream's
	// broker.gvisorEnabled, shipped false: accepted without being shown).
	GVisorEnabled bool
	// GVisorAllowedGlobalAccounts may use the gvisor parameter ("*": all).
	GVisorAllowedGlobalAccounts []string
	// BlocklistFile is the operation blocklist (internal/guardrails), read
	// again every BlocklistReload; "" blocks nothing.
	BlocklistFile   string
	BlocklistReload time.Duration
	// RestrictToAllowedGlobalAccounts lets only AllowedGlobalAccounts
	// provision.
	RestrictToAllowedGlobalAccounts bool
	AllowedGlobalAccounts           []string
	// QuotaCheck refuses provisionings beyond the subaccount's entitlement,
	// read from CIS at CISEntitlementsURL (with the APP_CIS_* credentials).
	QuotaCheck         bool
	CISEntitlementsURL string
	// SubaccountMovement lets a PATCH move a subaccount to another global
	// account.
	SubaccountMovement bool
	OperationTimeout   time.Duration
	RetryAfter         time.Duration
	// TrialDuration, when positive, replaces the trial plan's lifetime
	// (plans.yaml's lifetimeDays): how long a trial lives before the expiry
	// job suspends it.
	TrialDuration time.Duration
	// FreeDuration, when positive, replaces the free plan's lifetime (30
	// days in plans.yaml).
	FreeDuration time.Duration
	// RequestTimeout bounds one API request's work, its database work
	// included; past it the request is answered 503 with Retry-After.
	RequestTimeout time.Duration
	// ReadinessInterval is how often the readiness checks run in the
	// background; /readyz answers from their latest results.
	ReadinessInterval time.Duration
	// BrokerURL is the broker's public base URL, which the KubeconfigURL
	// instance label links to; empty: https://<the OSB request's Host>.
	BrokerURL string
	// KubeconfigAllowOrigins are the origins allowed to fetch
	// /kubeconfig/{instance_id} without a token, with CORS headers.
	KubeconfigAllowOrigins []string
	// TrialDocsURL and FreeDocsURL are the documentation an expired trial's
	// or free instance's labels link to instead of its runtime.
	TrialDocsURL, FreeDocsURL string
	// EventsRetention is how long /events keeps an operation's events after
	// it ended.
	EventsRetention time.Duration

	JWKSURLs        []string
	PublicKeyFiles  []string
	Issuer          string
	Audience        string
	TrustGateway    bool
	JWKSRefresh     time.Duration
	ShutdownTimeout time.Duration
	// ShutdownDelay is how long a stopping replica keeps serving with
	// /readyz failing before it stops accepting connections, so that load
	// balancers take it out of rotation first (keb serve only).
	ShutdownDelay time.Duration

	LogFormat string
	LogLevel  string
	// PprofAddr, when set, serves net/http/pprof on its own listener (for
	// profiling under load; never on the broker's port).
	PprofAddr string

	// MetricsCensusInterval bounds how often the gauges read from the
	// database and the account pool are refreshed, whatever the scrape rate.
	MetricsCensusInterval time.Duration

	HTTP HTTP

	Engine Engine

	Cleanup Cleanup

	Binding Binding

	// AVS is the optional AVS integration (internal/avs).
	AVS avs.Config
	// EDP is the optional EDP integration (internal/edp).
	EDP edp.Config
	// IAS is the optional IAS integration (internal/ias).
	IAS ias.Config
	// LMS is the optional LMS integration (internal/lms).
	LMS lms.Config
	// Director is the optional Director integration (internal/director).
	Director director.Config
}

// HTTP bounds what one client can take from the HTTP server, so that hostile
// or careless callers cannot starve it.
type HTTP struct {
	// MaxBodyBytes caps a request body on the OSB routes (413 beyond).
	MaxBodyBytes int
	// ReadTimeout bounds reading a whole request, headers and body.
	ReadTimeout time.Duration
	// MaxConnections caps concurrently open connections; more wait in the
	// listen backlog.
	MaxConnections int
	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request before keb closes it. It must outlast the idle timeout of
	// whatever reuses keb's connections (a load balancer, a platform's HTTP
	// client): a request sent on a connection just as keb closes it gets no
	// answer, and a client does not re-send a PUT by itself.
	IdleTimeout time.Duration
	// FormReadTimeout bounds reading the body of a request keb reads
	// before it knows who sends it (the console's login form, `keb dev`'s
	// token endpoints): such bodies are small, and a slow one must not
	// hold a connection for the whole ReadTimeout.
	FormReadTimeout time.Duration
	// MetricsAddress, when set, serves /metrics on its own listener (and
	// not on the main one).
	MetricsAddress string
}

// Engine is what drives accepted operations: the work queue, the control
// plane, the account pool and the steps' timing.
type Engine struct {
	Workers     int
	JobTimeout  time.Duration
	RescueAfter time.Duration
	// TakeoverAfter is how long a running operation may hold no instance
	// lock (its replica died) before another replica takes it over.
	TakeoverAfter   time.Duration
	KCPKubeconfig   string
	GardenerKubecfg string
	GardenerProject string
	KymaVersion     string
	OnDemandVersion bool
	ShootDomain     string
	RuntimeTimeout  time.Duration
	AccountTimeout  time.Duration
	BTPMgrTimeout   time.Duration
	RemovalTimeout  time.Duration
	RuntimePoll     time.Duration
	// RuntimeGrace is how long a change keb wrote into a Ready Runtime CR
	// may leave no trace in its status before it counts as applied.
	RuntimeGrace time.Duration
	BTPMgrPoll   time.Duration
	RemovalPoll  time.Duration
	// RemovalSkipAfter bounds the retries of deprovisioning steps that may
	// be skipped (deprovisioning.Config.SkipAfter).
	RemovalSkipAfter time.Duration
	// FinalizerGrace: see deprovisioning.Config.FinalizerGrace.
	FinalizerGrace time.Duration
	// LeftoversInterval is how often the leader retries what skipped
	// deprovisioning steps left behind (0: never).
	LeftoversInterval time.Duration

	// ShootDomain (above) is the domain runtimes' shoots live under: a
	// runtime's domain is <shoot>.<ShootDomain> (its Kyma CR's skr-domain
	// annotation; its dashboard is console.<domain>). KymaInternal and
	// KymaBeta are the plans and global accounts whose Kyma CRs are labelled
	// to see Lifecycle Manager's internal and beta modules.
	KymaInternal, KymaBeta Audience
	// AwaitKymaReady makes provisioning wait for the Kyma CR to be Ready,
	// at most KymaTimeout.
	AwaitKymaReady bool
	KymaTimeout    time.Duration
	// ExpiryInterval is how often the expiry job looks for trials to
	// suspend.
	ExpiryInterval time.Duration
	// BTPSecrets: the drift repair of runtimes' sap-btp-manager Secrets.
	BTPSecrets BTPSecrets
	// Orchestrations: see internal/orchestration.
	Orchestration Orchestration
	// Runtime: what every Runtime CR carries from the settings.
	Runtime Runtime
	// HAP: the hyperscaler account pool (internal/hyperscaler).
	HAP HAP
}

// HAP is the hyperscaler account pool's configuration, in upstream's terms where upstream has them.
type HAP struct {
	// PoolKind is what the pool is made of: CredentialsBinding (default), SecretBinding, or the
	// labelled Secrets of keb installs before bindings (Secret).
	PoolKind string
	// Rules are the HAP rules choosing each provisioning's pool (internal/hyperscaler/rules.go),
	// RuleFile a file of more of them, one a line; with neither, keb's default rule set.
	Rules    []string
	RuleFile string
	// MultiAccountGlobalAccounts may hold several accounts of a pool ("*": every global account);
	// each account then takes at most MultiAccountLimits[provider] (or ["default"]) instances.
	MultiAccountGlobalAccounts []string
	MultiAccountLimits         MultiAccountLimits
	// ReleaseShootTimeout bounds how long a deprovisioning waits for its own Shoot to be gone
	// before deciding whether the account is dirty.
	ReleaseShootTimeout time.Duration
}

// MultiAccountLimits are the instances one account of a multi-account global account takes, by
// provider; 0 takes Default's, and a Default of 0 means no limit.
type MultiAccountLimits struct {
	Default, AWS, GCP, Azure, OpenStack, AliCloud int
}

// For is the limit of provider's accounts (0: none).
func (l MultiAccountLimits) For(provider string) int {
	n := map[string]int{"aws": l.AWS, "gcp": l.GCP, "azure": l.Azure, "openstack": l.OpenStack, "alicloud": l.AliCloud}[provider]
	if n == 0 {
		return l.Default
	}
	return n
}

// BTPSecrets holds the settings of the sap-btp-manager Secret reconciler
// (internal/btpsecrets).
type BTPSecrets struct {
	// Interval is how often a pass over every running runtime starts; 0
	// switches the reconciler off.
	Interval time.Duration
	// Rate is how many runtimes per second it looks at.
	Rate int
	// DryRun counts and logs what it would do without writing.
	DryRun bool
}

// Runtime holds the settings upstream KEB calls infrastructureManager.*:
// what keb writes into every Runtime CR besides the request's parameters
// (provisioning.RuntimeSettings).
type Runtime struct {
	// KubernetesVersion is spec.shoot.kubernetes.version; upstream's chart
	// ships the placeholder 1.16.9 and every deployment sets its own.
	KubernetesVersion string
	// MachineImage and MachineImageVersion are every worker's machine.image
	// (written even when empty, as upstream writes them), unless the plans
	// file names one for the provider.
	MachineImage, MachineImageVersion string
	// ControlPlaneFailureTolerance (node, zone or "") is the paid plans'
	// spec.shoot.controlPlane.highAvailability.failureTolerance.type.
	ControlPlaneFailureTolerance string
	// MaxPods is every worker pool's kubelet maxPods in the runtimes of
	// MaxPodsGlobalAccounts ("*": all).
	MaxPods               int
	MaxPodsGlobalAccounts []string
}

// Audience selects runtimes by plan name or global account ID.
type Audience struct {
	Plans, GlobalAccounts []string
}

// Orchestration holds the settings of fleet-wide upgrades.
type Orchestration struct {
	// MaintenanceWindows are the runtimes' windows by plan and region
	// (maintenance.ParseConfig); empty is 22:00-02:00 UTC for all.
	MaintenanceWindows string
	// Defaults of cluster upgrades that name no version or image.
	KubernetesVersion, MachineImage, MachineImageVersion string
	// Poll is how often a running orchestration's scheduler looks at it.
	Poll time.Duration
	// UpgradeTimeout bounds one runtime's upgrade operation.
	UpgradeTimeout time.Duration
}

// Defaults are the values used when neither flag nor environment says otherwise.
var Defaults = Config{
	Host:                 "0.0.0.0",
	Port:                 8080,
	MigrateOnStart:       true,
	DefaultRequestRegion: "cf-eu10",
	TrialDocsURL:         "https://help.sap.com/docs/btp/sap-business-technology-platform/trial-accounts-and-free-tier",
	FreeDocsURL:          "https://help.sap.com/docs/btp/sap-business-technology-platform/available-plans-in-kyma-environment",
	EventsRetention:      14 * 24 * time.Hour,
	EnabledPlans:         catalog.DefaultEnabledPlans(),
	SeedsConfigMap:       seeds.DefaultConfigMap,
	// keb's strictness from the start; upstream's default is false.
	RejectUnsupportedParameters: true,
	BlocklistReload:             10 * time.Second,
	OperationTimeout:            24 * time.Hour,
	RetryAfter:                  10 * time.Second,
	RequestTimeout:              20 * time.Second,
	ReadinessInterval:           2 * time.Second,
	JWKSRefresh:                 15 * time.Minute,
	ShutdownTimeout:             30 * time.Second,
	LogFormat:                   "auto",
	LogLevel:                    "info",
	MetricsCensusInterval:       30 * time.Second,
	HTTP: HTTP{
		MaxBodyBytes:    1 << 20,
		ReadTimeout:     30 * time.Second,
		MaxConnections:  1000,
		IdleTimeout:     2 * time.Minute,
		FormReadTimeout: 5 * time.Second,
	},
	Engine: Engine{
		Workers:           20,
		JobTimeout:        time.Minute,
		RescueAfter:       2 * time.Minute,
		TakeoverAfter:     10 * time.Second,
		GardenerProject:   "kyma-dev",
		KymaVersion:       "2.20.0",
		ShootDomain:       "kyma.example.com",
		KymaTimeout:       20 * time.Minute,
		RuntimeTimeout:    time.Hour,
		AccountTimeout:    30 * time.Minute,
		HAP:               HAP{PoolKind: "CredentialsBinding", ReleaseShootTimeout: time.Hour},
		BTPMgrTimeout:     20 * time.Minute,
		RemovalTimeout:    time.Hour,
		RuntimePoll:       30 * time.Second,
		RuntimeGrace:      time.Minute,
		BTPMgrPoll:        10 * time.Second,
		RemovalPoll:       15 * time.Second,
		RemovalSkipAfter:  5 * time.Minute,
		FinalizerGrace:    time.Minute,
		LeftoversInterval: time.Hour,
		ExpiryInterval:    time.Hour,
		BTPSecrets:        BTPSecrets{Interval: 24 * time.Hour, Rate: 10},
		Orchestration:     Orchestration{Poll: time.Second, UpgradeTimeout: 3 * time.Hour},
		// Upstream KEB's shipped values (resources/keb/values.yaml).
		Runtime: Runtime{KubernetesVersion: "1.16.9", MaxPods: 200},
	},
	Binding: DefaultBinding,
}

// Binder registers flags whose defaults come from environment variables, and
// remembers which malformed environment values it met so that Validate can
// name them instead of silently using a default.
type Binder struct {
	fs   *flag.FlagSet
	errs []error
	envs []string
	// upstream notes the aliases of upstream KEB's settings read or
	// overridden (UpstreamReport).
	upstream []UpstreamNote
}

// NewBinder binds flags on fs.
func NewBinder(fs *flag.FlagSet) *Binder { return &Binder{fs: fs} }

// Err returns the malformed environment values met while binding.
func (b *Binder) Err() error { return errors.Join(b.errs...) }

// usage is a flag's help naming its variable, which it records for Envs.
func (b *Binder) usage(help, env string) string {
	b.envs = append(b.envs, env)
	return fmt.Sprintf("%s (env %s)", help, env)
}

// Envs lists the environment variables of every flag bound so far: the
// settings a deployment may set (the Helm chart's test checks it against
// them).
func (b *Binder) Envs() []string { return append([]string(nil), b.envs...) }

// String binds a string flag.
func (b *Binder) String(p *string, name, env, def, help string) {
	if v, ok := b.lookup(env); ok {
		def = v
	}
	b.fs.StringVar(p, name, def, b.usage(help, env))
}

// Int binds an int flag.
func (b *Binder) Int(p *int, name, env string, def int, help string) {
	if v, ok := b.lookup(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s=%q: not an integer", env, v))
		} else {
			def = n
		}
	}
	b.fs.IntVar(p, name, def, b.usage(help, env))
}

// Bool binds a bool flag.
func (b *Binder) Bool(p *bool, name, env string, def bool, help string) {
	if v, ok := b.lookup(env); ok {
		x, err := strconv.ParseBool(v)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s=%q: not a boolean", env, v))
		} else {
			def = x
		}
	}
	b.fs.BoolVar(p, name, def, b.usage(help, env))
}

// Duration binds a duration flag (Go syntax: 90s, 15m, 24h).
func (b *Binder) Duration(p *time.Duration, name, env string, def time.Duration, help string) {
	if v, ok := b.lookup(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s=%q: not a duration (use e.g. 90s, 15m, 24h)", env, v))
		} else {
			def = d
		}
	}
	b.fs.DurationVar(p, name, def, b.usage(help, env))
}

// List binds a comma-separated list flag.
func (b *Binder) List(p *[]string, name, env string, def []string, help string) {
	if v, ok := b.lookup(env); ok {
		def = splitList(v)
	}
	// A copy: binding must never let a caller mutate Defaults.
	*p = append([]string(nil), def...)
	help += " (comma-separated"
	if len(def) > 0 {
		help += fmt.Sprintf("; default %q", strings.Join(def, ","))
	}
	b.fs.Func(name, b.usage(help+")", env), func(s string) error {
		*p = splitList(s)
		return nil
	})
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// BindDatabase binds the database URL. APP_DATABASE_URL wins; the common
// DATABASE_URL is honoured when it is absent.
//
// Upstream KEB's APP_DATABASE_HOST, _PORT, _NAME, _USER, _PASSWORD, _SSLMODE
// and _SSLROOTCERT are read as one URL when neither of keb's names is set.
func (c *Config) BindDatabase(b *Binder) {
	def := os.Getenv("DATABASE_URL")
	if u, parts := upstreamDatabaseURL(); u != "" {
		outcome, keb := UpstreamRead, "APP_DATABASE_URL"
		if _, own := os.LookupEnv(keb); own {
			outcome = UpstreamOverridden
		} else if def != "" {
			outcome, keb = UpstreamOverridden, "DATABASE_URL"
		} else {
			def = u
		}
		for _, p := range parts {
			b.noteUpstream(UpstreamNote{Upstream: p, Keb: keb, Outcome: outcome})
		}
	}
	b.String(&c.DatabaseURL, "database-url", "APP_DATABASE_URL", def,
		"PostgreSQL URL, e.g. postgres://keb@localhost:5432/keb (DATABASE_URL is used when unset)")
	b.Int(&c.DatabaseMaxConns, "database-max-conns", "APP_DATABASE_MAX_CONNS", 0,
		"database connections of this replica (0: twice the workers plus 10)")
}

// BindServe binds every setting of the broker server.
func (c *Config) BindServe(b *Binder) {
	d := Defaults
	b.String(&c.Host, "host", "APP_HOST", d.Host, "address to listen on")
	b.Int(&c.Port, "port", "APP_PORT", d.Port, "HTTP port")
	c.BindDatabase(b)
	c.BindBroker(b)
	b.String(&c.DatabaseSecretKey, "database-secret-key", "APP_DATABASE_SECRET_KEY", "",
		"32-byte key (raw or base64) sealing secrets at rest with AES-GCM")
	b.List(&c.DatabaseSecretKeysPrior, "database-secret-keys-previous", "APP_DATABASE_SECRET_KEYS_PREVIOUS", nil,
		"earlier secret keys, still accepted for reading after a rotation")
	b.Bool(&c.MigrateOnStart, "migrate", "APP_DATABASE_MIGRATE", d.MigrateOnStart,
		"apply database migrations at start")
	b.List(&c.JWKSURLs, "auth-jwks-urls", "APP_AUTH_JWKS_URLS", nil, "JWKS URLs of trusted token issuers")
	b.List(&c.PublicKeyFiles, "auth-public-key-files", "APP_AUTH_PUBLIC_KEY_FILES", nil,
		"PEM files with public keys of trusted token issuers")
	b.String(&c.Issuer, "auth-issuer", "APP_AUTH_ISSUER", "", "required token issuer (iss); empty accepts any")
	b.String(&c.Audience, "auth-audience", "APP_AUTH_AUDIENCE", "", "required token audience (aud); empty accepts any")
	b.Bool(&c.TrustGateway, "auth-trust-gateway", "APP_AUTH_TRUST_GATEWAY", false,
		"trust an upstream gateway that already verified tokens: signatures are NOT checked (scopes and expiry are)")
	b.Duration(&c.JWKSRefresh, "auth-jwks-refresh", "APP_AUTH_JWKS_REFRESH", d.JWKSRefresh, "how often JWKS are re-fetched")
	c.BindEngine(b)
	c.BindCleanup(b)
	// A production broker's logs go to a collector: JSON even on a terminal.
	b.Duration(&c.ShutdownDelay, "shutdown-delay", "APP_SHUTDOWN_DELAY", ServeShutdownDelay,
		"on SIGTERM, how long to keep serving with /readyz failing before closing the listener, so that load balancers stop sending first")
	c.bindCommon(b, "json")
}

// BindBroker binds the OSB behaviour shared by `serve` and `dev`.
func (c *Config) BindBroker(b *Binder) {
	d := Defaults
	b.String(&c.DefaultRequestRegion, "default-request-region", "APP_BROKER_DEFAULT_REQUEST_REGION", d.DefaultRequestRegion,
		"platform region of requests to /oauth/v2/... (without a region segment)")
	b.List(&c.EnabledPlans, "enabled-plans", "APP_BROKER_ENABLED_PLANS", d.EnabledPlans, "plans offered in the catalog")
	b.String(&c.BlocklistFile, "operation-blocklist-file", "APP_OPERATION_BLOCKLIST_FILE", "",
		"YAML file of operation blocklist rules (provision, update, planUpgrade, deprovision); checked at start, re-read when it changes")
	b.Duration(&c.BlocklistReload, "operation-blocklist-reload", "APP_OPERATION_BLOCKLIST_RELOAD", d.BlocklistReload,
		"how often the operation blocklist file is looked at for changes (a ConfigMap volume is updated in place)")
	b.Bool(&c.RestrictToAllowedGlobalAccounts, "restrict-to-allowed-global-accounts", "APP_BROKER_RESTRICT_TO_ALLOWED_GLOBAL_ACCOUNTS", false,
		"only the global accounts APP_BROKER_ALLOWED_GLOBAL_ACCOUNTS lists may provision")
	b.Bool(&c.SubaccountMovement, "subaccount-movement-enabled", "APP_SUBACCOUNT_MOVEMENT_ENABLED", false,
		"a PATCH with another globalaccount_id moves the instance's subaccount there (recorded, CRs relabelled); off: 422")
	b.Bool(&c.QuotaCheck, "check-quota-limit", "APP_BROKER_CHECK_QUOTA_LIMIT", false,
		"refuse a provisioning beyond the subaccount's entitlement of the plan (CIS entitlements; not for trial and free)")
	b.String(&c.CISEntitlementsURL, "cis-entitlements-url", "APP_CIS_ENTITLEMENTS_URL", "",
		"CIS's URL for the entitlements API (/entitlements/v1/... is appended); the token comes from APP_CIS_AUTH_URL with the APP_CIS_CLIENT_* credentials")
	b.List(&c.AllowedGlobalAccounts, "allowed-global-accounts", "APP_BROKER_ALLOWED_GLOBAL_ACCOUNTS", nil,
		"the global accounts that may provision when APP_BROKER_RESTRICT_TO_ALLOWED_GLOBAL_ACCOUNTS is set")
	b.String(&c.PlansFile, "plans-file", "APP_BROKER_PLANS_FILE", "",
		"plans/providers YAML replacing the embedded resources/plans.yaml")
	b.String(&c.SeedsConfigMap, "gardener-seeds-cache", "APP_BROKER_GARDENER_SEEDS_CACHE_CONFIG_MAP_NAME", d.SeedsConfigMap,
		"ConfigMap in kcp-system listing, per provider, the regions with a Gardener seed (YAML seedRegions); colocateControlPlane is accepted there only")
	b.String(&c.OIDCDefaultFile, "oidc-default-file", "APP_BROKER_OIDC_DEFAULT_FILE", "",
		"YAML of the runtimes' default OIDC provider (upstream's skrOIDCDefaultValues shape) replacing the embedded resources/oidc.yaml")
	b.Bool(&c.UseSmallerMachineTypes, "use-smaller-machine-types", "APP_INFRASTRUCTURE_MANAGER_USE_SMALLER_MACHINE_TYPES", false,
		"trial and free runtimes get the plans' smallerMachineTypes (AWS mi.large, Azure Standard_D2s_v5) instead of upstream's default sizes")
	b.Bool(&c.RejectUnsupportedParameters, "reject-unsupported-parameters", "APP_BROKER_REJECT_UNSUPPORTED_PARAMETERS",
		d.RejectUnsupportedParameters, "refuse parameters the plan's schema does not name with a 400 (false: ignore, log and count them)")
	b.String(&c.DualStackDocsURL, "dual-stack-docs-url", "APP_BROKER_DUAL_STACK_DOCS_URL", catalog.DefaultDualStackDocsURL,
		"page the networking.dualStack description links to (the plans of providers with dualStack in the plans file: AWS)")
	b.Bool(&c.GVisorEnabled, "gvisor-enabled", "APP_BROKER_GVISOR_ENABLED", false,
		"show gvisor (the runtime's and each pool's) in the plans' forms; without it the plans accept gvisor all the same, as upstream's shipped false")
	b.List(&c.GVisorAllowedGlobalAccounts, "gvisor-allowed-global-accounts", "APP_GVISOR_ALLOWED_GLOBAL_ACCOUNTS", nil,
		"global accounts whose runtimes may use the gvisor parameter (* for all)")
	b.Duration(&c.OperationTimeout, "operation-timeout", "APP_BROKER_OPERATION_TIMEOUT", d.OperationTimeout,
		"how long an operation may run before it fails")
	b.Duration(&c.RetryAfter, "retry-after", "APP_BROKER_RETRY_AFTER", d.RetryAfter,
		"Retry-After sent with last_operation while an operation is in progress")
	b.Duration(&c.TrialDuration, "trial-duration", "APP_TRIAL_DURATION", d.TrialDuration,
		"how long a trial runtime lives before it is suspended; unset: the trial plan's lifetimeDays in plans.yaml")
	b.String(&c.BrokerURL, "broker-url", "APP_BROKER_URL", "",
		"the broker's public base URL, for the KubeconfigURL instance label (empty: https://<the request's Host>)")
	b.List(&c.KubeconfigAllowOrigins, "kubeconfig-allow-origins", "APP_KUBECONFIG_ALLOW_ORIGINS", nil,
		"origins whose browsers may fetch /kubeconfig/{instance_id} without a token (CORS); '*' allows any")
	b.String(&c.TrialDocsURL, "trial-docs-url", "APP_TRIAL_DOCS_URL", d.TrialDocsURL,
		"documentation an expired trial's instance labels link to")
	b.String(&c.FreeDocsURL, "free-docs-url", "APP_FREE_DOCS_URL", d.FreeDocsURL,
		"documentation an expired free instance's labels link to")
	b.Duration(&c.EventsRetention, "events-retention", "APP_EVENTS_RETENTION", d.EventsRetention,
		"how long /events keeps a finished operation's events")
	b.Duration(&c.FreeDuration, "free-duration", "APP_FREE_DURATION", d.FreeDuration,
		"how long a free runtime lives before it is suspended; unset: the free plan's lifetimeDays in plans.yaml (30)")
	b.Duration(&c.RequestTimeout, "request-timeout", "APP_REQUEST_TIMEOUT", d.RequestTimeout,
		"bound on one API request's work (database included); past it the answer is 503 with Retry-After (0: none)")
	b.Duration(&c.ReadinessInterval, "readiness-interval", "APP_READINESS_INTERVAL", d.ReadinessInterval,
		"how often the readiness checks run in the background; /readyz answers from their latest results at once")
	c.bindHTTP(b)
	c.BindBinding(b)
}

// bindHTTP binds the HTTP server's limits.
func (c *Config) bindHTTP(b *Binder) {
	d := Defaults.HTTP
	b.Int(&c.HTTP.MaxBodyBytes, "http-max-body-bytes", "APP_HTTP_MAX_BODY_BYTES", d.MaxBodyBytes,
		"largest request body accepted on the OSB routes; larger ones get 413")
	b.Duration(&c.HTTP.ReadTimeout, "http-read-timeout", "APP_HTTP_READ_TIMEOUT", d.ReadTimeout,
		"how long a client may take to send a whole request (headers and body)")
	b.Int(&c.HTTP.MaxConnections, "http-max-connections", "APP_HTTP_MAX_CONNECTIONS", d.MaxConnections,
		"most connections served at once; further ones wait in the listen backlog")
	b.Duration(&c.HTTP.IdleTimeout, "http-idle-timeout", "APP_HTTP_IDLE_TIMEOUT", d.IdleTimeout,
		"how long a keep-alive connection may wait for its next request; keep it above the idle timeout of the load balancer or clients in front of keb")
	b.Duration(&c.HTTP.FormReadTimeout, "http-form-read-timeout", "APP_HTTP_FORM_READ_TIMEOUT", d.FormReadTimeout,
		"how long a client may take to send the body of the console's login form (408 beyond)")
	b.String(&c.HTTP.MetricsAddress, "metrics-address", "APP_METRICS_ADDRESS", "",
		"host:port serving /metrics on a listener of its own (default: /metrics on the main listener)")
}

// BindEngine binds the settings of the engine that drives operations.
func (c *Config) BindEngine(b *Binder) {
	c.BindAVS(b)
	c.BindEDP(b)
	c.BindIAS(b)
	c.BindLMS(b)
	c.BindDirector(b)
	d := Defaults.Engine
	e := &c.Engine
	b.Int(&e.Workers, "workers", "APP_WORKERS", d.Workers,
		"operations this replica works on at once; 0 accepts requests but drives no operation")
	b.Duration(&e.JobTimeout, "worker-job-timeout", "APP_WORKER_JOB_TIMEOUT", d.JobTimeout,
		"bound on one run of an operation's steps")
	b.Duration(&e.RescueAfter, "worker-rescue-after", "APP_WORKER_RESCUE_AFTER", d.RescueAfter,
		"backstop: how long a job may look running before River's rescuer retries it (> job timeout)")
	b.Duration(&e.TakeoverAfter, "worker-takeover-after", "APP_WORKER_TAKEOVER_AFTER", d.TakeoverAfter,
		"how long a running operation may hold no instance lock (its replica died) before another replica takes it over")
	b.String(&e.KCPKubeconfig, "kcp-kubeconfig", "APP_KCP_KUBECONFIG", os.Getenv("KUBECONFIG"),
		"kubeconfig of the control plane (Runtime and Kyma CRs); KUBECONFIG is used when unset")
	b.String(&e.GardenerKubecfg, "gardener-kubeconfig", "APP_GARDENER_KUBECONFIG_PATH", "",
		"kubeconfig of the cluster holding the hyperscaler account pool (default: the control plane)")
	b.String(&e.GardenerProject, "gardener-project", "APP_GARDENER_PROJECT", d.GardenerProject,
		"project of the account pool: secrets live in namespace garden-<project>")
	b.String(&e.KymaVersion, "kyma-version", "APP_KYMA_VERSION", d.KymaVersion, "default Kyma version")
	b.Bool(&e.OnDemandVersion, "on-demand-version", "APP_ENABLE_ON_DEMAND_VERSION", false,
		"let the kymaVersion provisioning parameter choose the Kyma version")
	shootDomain := d.ShootDomain
	if v, ok := os.LookupEnv("APP_DASHBOARD_DOMAIN"); ok {
		shootDomain = v // the setting's earlier name
	}
	b.String(&e.ShootDomain, "shoot-domain", "APP_SHOOT_DOMAIN", shootDomain,
		"domain of runtimes: a runtime's domain is <shoot>.<domain> (its Kyma CR's skr-domain annotation; dashboard https://console.<shoot>.<domain>); APP_DASHBOARD_DOMAIN is its earlier name")
	b.List(&e.KymaInternal.Plans, "kyma-internal-plans", "APP_KYMA_INTERNAL_PLANS", nil,
		"plans whose Kyma CRs get operator.kyma-project.io/internal: \"true\" (Lifecycle Manager's internal modules)")
	b.List(&e.KymaInternal.GlobalAccounts, "kyma-internal-global-accounts", "APP_KYMA_INTERNAL_GLOBAL_ACCOUNTS", nil,
		"global accounts whose Kyma CRs get operator.kyma-project.io/internal: \"true\"")
	b.List(&e.KymaBeta.Plans, "kyma-beta-plans", "APP_KYMA_BETA_PLANS", nil,
		"plans whose Kyma CRs get operator.kyma-project.io/beta: \"true\" (Lifecycle Manager's beta modules)")
	b.List(&e.KymaBeta.GlobalAccounts, "kyma-beta-global-accounts", "APP_KYMA_BETA_GLOBAL_ACCOUNTS", nil,
		"global accounts whose Kyma CRs get operator.kyma-project.io/beta: \"true\"")
	b.Bool(&e.AwaitKymaReady, "await-kyma-ready", "APP_PROVISIONING_AWAIT_KYMA_READY", false,
		"provisioning also waits for the Kyma CR to be Ready (Lifecycle Manager installed every module)")
	b.Duration(&e.KymaTimeout, "kyma-timeout", "APP_PROVISIONING_KYMA_TIMEOUT", d.KymaTimeout,
		"with APP_PROVISIONING_AWAIT_KYMA_READY: how long provisioning waits for the Kyma CR to be Ready")
	b.Duration(&e.RuntimeTimeout, "runtime-timeout", "APP_PROVISIONING_RUNTIME_TIMEOUT", d.RuntimeTimeout,
		"how long provisioning waits for the cluster")
	b.Duration(&e.AccountTimeout, "account-timeout", "APP_PROVISIONING_ACCOUNT_TIMEOUT", d.AccountTimeout,
		"how long provisioning waits for a free hyperscaler account")
	b.Duration(&e.BTPMgrTimeout, "btp-manager-timeout", "APP_PROVISIONING_BTP_MANAGER_TIMEOUT", d.BTPMgrTimeout,
		"how long provisioning waits for the runtime to serve the BtpOperator kind")
	b.Duration(&e.RemovalTimeout, "removal-timeout", "APP_DEPROVISIONING_TIMEOUT", d.RemovalTimeout,
		"how long deprovisioning waits for the cluster (the Runtime CR) to be gone before it fails")
	b.Duration(&e.RuntimePoll, "runtime-poll", "APP_PROVISIONING_RUNTIME_POLL", d.RuntimePoll,
		"how often a waiting provisioning looks at its cluster (watches wake it sooner)")
	b.Duration(&e.RuntimeGrace, "runtime-apply-grace", "APP_RUNTIME_APPLY_GRACE", d.RuntimeGrace,
		"how long a change written into a Ready Runtime CR may leave its status untouched before it counts as applied (docs/architecture.md)")
	b.Duration(&e.BTPMgrPoll, "btp-manager-poll", "APP_PROVISIONING_BTP_MANAGER_POLL", d.BTPMgrPoll,
		"how often the final step retries while the runtime lacks the BtpOperator kind")
	b.Duration(&e.RemovalPoll, "removal-poll", "APP_DEPROVISIONING_POLL", d.RemovalPoll,
		"how often a deprovisioning looks whether its CRs are gone (watches wake it sooner)")
	b.Duration(&e.LeftoversInterval, "leftovers-retry-interval", "APP_DEPROVISIONING_LEFTOVERS_RETRY_INTERVAL", d.LeftoversInterval,
		"how often the leader retries what skipped deprovisioning steps left behind (a Kyma CR, an unreleased account); 0: never")
	b.Duration(&e.FinalizerGrace, "btp-finalizer-grace", "APP_DEPROVISIONING_BTP_FINALIZER_GRACE", d.FinalizerGrace,
		"how long the BTP service bindings and instances in the runtime of a deleted subaccount may hold their finalizers before the deprovisioning strips them (keep it below APP_DEPROVISIONING_STEP_SKIP_AFTER)")
	b.Duration(&e.RemovalSkipAfter, "removal-skip-after", "APP_DEPROVISIONING_STEP_SKIP_AFTER", d.RemovalSkipAfter,
		"how long a deprovisioning retries removing bindings, the Kyma CR or the account's claim before it skips the step, reports what it left and deletes the cluster")
	b.Duration(&e.BTPSecrets.Interval, "btp-secrets-interval", "APP_BTP_SECRETS_RECONCILE_INTERVAL", d.BTPSecrets.Interval,
		"how often the leader starts a pass repairing every running runtime's sap-btp-manager Secret (0: never)")
	b.Int(&e.BTPSecrets.Rate, "btp-secrets-rate", "APP_BTP_SECRETS_RECONCILE_RATE", d.BTPSecrets.Rate,
		"runtimes per second the sap-btp-manager Secret reconciler looks at")
	b.Bool(&e.BTPSecrets.DryRun, "btp-secrets-dry-run", "APP_BTP_SECRETS_RECONCILE_DRY_RUN", false,
		"the sap-btp-manager Secret reconciler only counts and logs the drift it finds")
	b.Duration(&e.ExpiryInterval, "expiry-interval", "APP_EXPIRY_INTERVAL", d.ExpiryInterval,
		"how often one replica looks for instances older than their plan's lifetime and suspends them")
	c.bindHAP(b)
	c.bindRuntime(b)
	o, do := &e.Orchestration, d.Orchestration
	b.String(&o.MaintenanceWindows, "maintenance-windows", "APP_MAINTENANCE_WINDOWS", "",
		"runtimes' daily maintenance windows (UTC): default=22:00-02:00,<region>=HH:MM-HH:MM,plan:<plan>=HH:MM-HH:MM")
	b.String(&o.KubernetesVersion, "upgrade-kubernetes-version", "APP_UPGRADE_KUBERNETES_VERSION", "",
		"Kubernetes version of cluster upgrades that name none")
	b.String(&o.MachineImage, "upgrade-machine-image", "APP_UPGRADE_MACHINE_IMAGE", "",
		"machine image of cluster upgrades that name none")
	b.String(&o.MachineImageVersion, "upgrade-machine-image-version", "APP_UPGRADE_MACHINE_IMAGE_VERSION", "",
		"machine image version of cluster upgrades that name none")
	b.Duration(&o.Poll, "orchestration-poll", "APP_ORCHESTRATION_POLL", do.Poll,
		"how often a running orchestration's scheduler looks at it (finished upgrades wake it sooner)")
	b.Duration(&o.UpgradeTimeout, "upgrade-timeout", "APP_UPGRADE_TIMEOUT", do.UpgradeTimeout,
		"bound on one runtime's upgrade operation")
}

// ServeShutdownDelay is keb serve's APP_SHUTDOWN_DELAY: the time a
// Kubernetes Service's endpoints and the load balancers behind it take to
// drop a terminating pod (seconds). keb dev and in-process tests stop at
// once (Defaults: 0).
const ServeShutdownDelay = 5 * time.Second

// bindHAP binds the account pool's settings, with upstream's variable names where upstream has
// them.
func (c *Config) bindHAP(b *Binder) {
	h, d := &c.Engine.HAP, Defaults.Engine.HAP
	b.String(&h.PoolKind, "hap-pool-kind", "APP_HAP_POOL_KIND", d.PoolKind,
		"what the account pool is made of: CredentialsBinding, SecretBinding, or Secret (labelled Secrets of keb installs before bindings; see docs/deploying.md)")
	h.Rules = nil
	if v, ok := os.LookupEnv("APP_HAP_RULE"); ok {
		h.Rules = SplitRules(v)
	}
	b.fs.Func("hap-rule", b.usage("HAP rules, separated by ';' or new lines (default: keb's rule set, see docs/deploying.md)", "APP_HAP_RULE"),
		func(v string) error { h.Rules = SplitRules(v); return nil })
	b.String(&h.RuleFile, "hap-rule-file", "APP_HAP_RULE_FILE_PATH", "",
		"file of HAP rules, one a line (# comments), added to APP_HAP_RULE")
	b.List(&h.MultiAccountGlobalAccounts, "hap-multi-account-global-accounts", "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_ALLOWED_GLOBAL_ACCOUNTS", nil,
		"global accounts that may hold several accounts of a pool (* for all)")
	l := &h.MultiAccountLimits
	for _, lim := range []struct {
		p    *int
		name string
	}{{&l.Default, "default"}, {&l.AWS, "aws"}, {&l.GCP, "gcp"}, {&l.Azure, "azure"}, {&l.OpenStack, "openstack"}, {&l.AliCloud, "alicloud"}} {
		b.Int(lim.p, "hap-multi-account-limit-"+lim.name, "APP_HAP_MULTI_HYPERSCALER_ACCOUNT_LIMITS_"+strings.ToUpper(lim.name), 0,
			"instances per account of a multi-account global account on "+lim.name+" (0: the default's; a default of 0: no limit)")
	}
	b.Duration(&h.ReleaseShootTimeout, "hap-release-shoot-timeout", "APP_HAP_RELEASE_SHOOT_TIMEOUT", d.ReleaseShootTimeout,
		"how long a deprovisioning waits for its Shoot to be gone before deciding whether its account is dirty")
}

// bindRuntime binds what every Runtime CR carries, with upstream's variable
// names (its infrastructureManager.* chart values).
func (c *Config) bindRuntime(b *Binder) {
	r, d := &c.Engine.Runtime, Defaults.Engine.Runtime
	b.String(&r.KubernetesVersion, "kubernetes-version", "APP_INFRASTRUCTURE_MANAGER_KUBERNETES_VERSION", d.KubernetesVersion,
		"Kubernetes version of new runtimes (the Runtime CR's spec.shoot.kubernetes.version; upstream's placeholder default: set your landscape's)")
	b.String(&r.MachineImage, "machine-image", "APP_INFRASTRUCTURE_MANAGER_MACHINE_IMAGE", d.MachineImage,
		"worker nodes' OS image of new runtimes and worker pools (machine.image.name; empty: the infrastructure manager's default); a plans file's providers.*.machineImage wins")
	b.String(&r.MachineImageVersion, "machine-image-version", "APP_INFRASTRUCTURE_MANAGER_MACHINE_IMAGE_VERSION", d.MachineImageVersion,
		"version of that image (machine.image.version; empty: the image's default)")
	b.String(&r.ControlPlaneFailureTolerance, "control-plane-failure-tolerance", "APP_INFRASTRUCTURE_MANAGER_CONTROL_PLANE_FAILURE_TOLERANCE",
		d.ControlPlaneFailureTolerance,
		"node or zone: the control plane's failure tolerance on paid plans (not azure_lite, trial, free); empty: none written")
	b.Int(&r.MaxPods, "max-pods", "APP_INFRASTRUCTURE_MANAGER_MAX_PODS", d.MaxPods,
		"kubelet maxPods of every worker pool in the runtimes of APP_MAX_PODS_ALLOWED_GLOBAL_ACCOUNTS")
	b.List(&r.MaxPodsGlobalAccounts, "max-pods-allowed-global-accounts", "APP_MAX_PODS_ALLOWED_GLOBAL_ACCOUNTS", nil,
		"global accounts whose new worker pools get APP_INFRASTRUCTURE_MANAGER_MAX_PODS (* for all)")
}

// SplitRules splits a rule list on ';' and new lines, dropping blanks and # comments.
func SplitRules(s string) []string {
	var out []string
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// BindCommon binds logging and shutdown settings.
func (c *Config) BindCommon(b *Binder) { c.bindCommon(b, Defaults.LogFormat) }

func (c *Config) bindCommon(b *Binder, logFormat string) {
	d := Defaults
	b.Duration(&c.ShutdownTimeout, "shutdown-timeout", "APP_SHUTDOWN_TIMEOUT", d.ShutdownTimeout,
		"how long to drain requests on SIGTERM")
	b.String(&c.LogFormat, "log-format", "APP_LOG_FORMAT", logFormat, "auto (text on a terminal, else JSON), json or text")
	b.String(&c.LogLevel, "log-level", "APP_LOG_LEVEL", d.LogLevel, "debug, info, warn or error")
	b.String(&c.PprofAddr, "pprof-addr", "APP_PPROF_ADDR", "",
		"address for Go's profiling endpoints (/debug/pprof/), e.g. 127.0.0.1:6060; empty: off. Never expose it publicly")
	b.Duration(&c.MetricsCensusInterval, "metrics-census-interval", "APP_METRICS_CENSUS_INTERVAL", d.MetricsCensusInterval,
		"how often the instance, queue and account pool gauges are re-read (at most once per interval, whatever the scrape rate)")
}

// Validate checks what flags alone cannot.
func (c *Config) Validate() error {
	var errs []error
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is out of range", c.Port))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("no database: set APP_DATABASE_URL (or DATABASE_URL)"))
	}
	if len(c.EnabledPlans) == 0 {
		errs = append(errs, errors.New("APP_BROKER_ENABLED_PLANS is empty: enable at least one plan"))
	}
	if c.OperationTimeout <= 0 {
		errs = append(errs, errors.New("APP_BROKER_OPERATION_TIMEOUT must be positive"))
	}
	if c.BrokerURL != "" && !isOrigin(strings.TrimRight(c.BrokerURL, "/"), true) {
		errs = append(errs, fmt.Errorf("APP_BROKER_URL=%q: want http(s)://host[:port][/path]", c.BrokerURL))
	}
	for _, o := range c.KubeconfigAllowOrigins {
		if o != "*" && !isOrigin(o, false) {
			errs = append(errs, fmt.Errorf("APP_KUBECONFIG_ALLOW_ORIGINS: %q is not an origin (scheme://host[:port], or *)", o))
		}
	}
	if c.EventsRetention <= 0 {
		errs = append(errs, errors.New("APP_EVENTS_RETENTION must be positive"))
	}
	if c.Engine.BTPSecrets.Interval < 0 || c.Engine.BTPSecrets.Rate <= 0 {
		errs = append(errs, errors.New("APP_BTP_SECRETS_RECONCILE_INTERVAL must not be negative and APP_BTP_SECRETS_RECONCILE_RATE must be positive"))
	}
	if c.FreeDuration < 0 {
		errs = append(errs, errors.New("APP_FREE_DURATION must not be negative"))
	}
	if c.TrialDuration < 0 {
		errs = append(errs, errors.New("APP_TRIAL_DURATION must not be negative"))
	}
	if c.Engine.Workers > 0 && c.Engine.ExpiryInterval <= 0 {
		errs = append(errs, errors.New("APP_EXPIRY_INTERVAL must be positive"))
	}
	if err := c.Binding.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := validateAVS(c.AVS); err != nil {
		errs = append(errs, err)
	}
	if err := validateEDP(c.EDP); err != nil {
		errs = append(errs, err)
	}
	if err := validateDirector(c.Director); err != nil {
		errs = append(errs, err)
	}
	if err := validateIAS(c.IAS); err != nil {
		errs = append(errs, err)
	}
	if err := validateLMS(c.LMS); err != nil {
		errs = append(errs, err)
	}
	if c.ReadinessInterval <= 0 {
		errs = append(errs, errors.New("APP_READINESS_INTERVAL must be positive"))
	}
	if c.QuotaCheck && (c.CISEntitlementsURL == "" || c.Cleanup.CISAuthURL == "") {
		errs = append(errs, errors.New("APP_BROKER_CHECK_QUOTA_LIMIT needs APP_CIS_ENTITLEMENTS_URL and APP_CIS_AUTH_URL"))
	}
	if c.BlocklistFile != "" {
		// Read here too, so that a malformed rule stops keb before it
		// touches the database; the App reads it again to keep it.
		if data, err := os.ReadFile(c.BlocklistFile); err != nil {
			errs = append(errs, fmt.Errorf("APP_OPERATION_BLOCKLIST_FILE: %w", err))
		} else if _, err := guardrails.Parse(data); err != nil {
			errs = append(errs, fmt.Errorf("APP_OPERATION_BLOCKLIST_FILE %s: %w", c.BlocklistFile, err))
		}
		if c.BlocklistReload <= 0 {
			errs = append(errs, errors.New("APP_OPERATION_BLOCKLIST_RELOAD must be positive"))
		}
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, errors.New("APP_REQUEST_TIMEOUT must not be negative"))
	}
	if c.Engine.Workers > 0 && c.Engine.TakeoverAfter <= 0 {
		errs = append(errs, errors.New("APP_WORKER_TAKEOVER_AFTER must be positive"))
	}
	if c.Engine.Workers > 0 && c.Engine.RescueAfter <= c.Engine.JobTimeout {
		errs = append(errs, errors.New("APP_WORKER_RESCUE_AFTER must be longer than APP_WORKER_JOB_TIMEOUT"))
	}
	if c.Engine.Workers > 0 && strings.Trim(c.Engine.ShootDomain, ".") == "" {
		errs = append(errs, errors.New("APP_SHOOT_DOMAIN is empty: runtimes need a domain (<shoot>.<domain>)"))
	}
	if c.Engine.Workers > 0 && c.Engine.AwaitKymaReady && c.Engine.KymaTimeout <= 0 {
		errs = append(errs, errors.New("APP_PROVISIONING_KYMA_TIMEOUT must be positive"))
	}
	if _, err := maintenance.ParseConfig(c.Engine.Orchestration.MaintenanceWindows); err != nil {
		errs = append(errs, fmt.Errorf("APP_MAINTENANCE_WINDOWS: %w", err))
	}
	if c.Engine.Workers > 0 && (c.Engine.Orchestration.Poll <= 0 || c.Engine.Orchestration.UpgradeTimeout <= 0) {
		errs = append(errs, errors.New("APP_ORCHESTRATION_POLL and APP_UPGRADE_TIMEOUT must be positive"))
	}
	switch c.Engine.Runtime.ControlPlaneFailureTolerance {
	case "", "node", "zone":
	default:
		errs = append(errs, fmt.Errorf("APP_INFRASTRUCTURE_MANAGER_CONTROL_PLANE_FAILURE_TOLERANCE=%q: use node, zone or nothing", c.Engine.Runtime.ControlPlaneFailureTolerance))
	}
	if len(c.Engine.Runtime.MaxPodsGlobalAccounts) > 0 && c.Engine.Runtime.MaxPods <= 0 {
		errs = append(errs, errors.New("APP_INFRASTRUCTURE_MANAGER_MAX_PODS must be positive when APP_MAX_PODS_ALLOWED_GLOBAL_ACCOUNTS names global accounts"))
	}
	if err := c.Cleanup.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.HTTP.MaxBodyBytes < 1<<10 {
		errs = append(errs, errors.New("APP_HTTP_MAX_BODY_BYTES must be at least 1024"))
	}
	if c.HTTP.ReadTimeout <= 0 {
		errs = append(errs, errors.New("APP_HTTP_READ_TIMEOUT must be positive"))
	}
	if c.HTTP.MaxConnections < 1 {
		errs = append(errs, errors.New("APP_HTTP_MAX_CONNECTIONS must be at least 1"))
	}
	if c.HTTP.IdleTimeout <= 0 {
		errs = append(errs, errors.New("APP_HTTP_IDLE_TIMEOUT must be positive"))
	}
	if c.HTTP.FormReadTimeout <= 0 {
		errs = append(errs, errors.New("APP_HTTP_FORM_READ_TIMEOUT must be positive"))
	}
	switch strings.ToLower(c.Engine.HAP.PoolKind) {
	case "credentialsbinding", "secretbinding", "secret":
	default:
		errs = append(errs, fmt.Errorf("APP_HAP_POOL_KIND=%q: use CredentialsBinding, SecretBinding or Secret", c.Engine.HAP.PoolKind))
	}
	switch c.LogFormat {
	case "auto", "json", "text":
	default:
		errs = append(errs, fmt.Errorf("APP_LOG_FORMAT=%q: use auto, json or text", c.LogFormat))
	}
	return errors.Join(errs...)
}

// PoolSize is the number of database connections a replica opens.
func (c *Config) PoolSize() int32 {
	if c.DatabaseMaxConns > 0 {
		return int32(c.DatabaseMaxConns)
	}
	// Each worker may hold an instance lock on one connection while its
	// step queries on another; the queue and the HTTP side need more.
	return int32(2*c.Engine.Workers + 10)
}

// isOrigin reports whether s is an http(s) origin (scheme://host[:port]),
// with a path when withPath.
func isOrigin(s string, withPath bool) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return withPath || u.Path == ""
}
