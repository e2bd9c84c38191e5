package config_test

import (
	"flag"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/director"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/lms"
)

// unsetEnv removes variables for the test and restores them afterwards
// (t.Setenv registers the restore; it also forbids t.Parallel).
func unsetEnv(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// values are one of each kind a Binder binds, under test-only variables.
type values struct {
	s string
	i int
	b bool
	d time.Duration
	l []string
}

var testEnv = []string{"KEB_TEST_S", "KEB_TEST_I", "KEB_TEST_B", "KEB_TEST_D", "KEB_TEST_L"}

func bindValues(fs *flag.FlagSet) (*values, *config.Binder) {
	v := &values{}
	b := config.NewBinder(fs)
	b.String(&v.s, "s", "KEB_TEST_S", "default", "a string")
	b.Int(&v.i, "i", "KEB_TEST_I", 7, "an int")
	b.Bool(&v.b, "b", "KEB_TEST_B", false, "a bool")
	b.Duration(&v.d, "d", "KEB_TEST_D", time.Second, "a duration")
	b.List(&v.l, "l", "KEB_TEST_L", []string{"x", "y"}, "a list")
	return v, b
}

func TestBinder(t *testing.T) {
	defaults := values{s: "default", i: 7, b: false, d: time.Second, l: []string{"x", "y"}}
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    values
		wantErr []string // substrings of Err(); nil means no error
	}{
		{name: "defaults without environment", want: defaults},
		{
			name: "environment replaces defaults",
			env:  map[string]string{"KEB_TEST_S": "from-env", "KEB_TEST_I": "42", "KEB_TEST_B": "true", "KEB_TEST_D": "90s", "KEB_TEST_L": "a,b"},
			want: values{s: "from-env", i: 42, b: true, d: 90 * time.Second, l: []string{"a", "b"}},
		},
		{
			name: "flags override environment",
			env:  map[string]string{"KEB_TEST_S": "from-env", "KEB_TEST_I": "42", "KEB_TEST_B": "true", "KEB_TEST_D": "90s", "KEB_TEST_L": "a,b"},
			args: []string{"-s", "from-flag", "-i", "43", "-b=false", "-d", "15m", "-l", "p,q"},
			want: values{s: "from-flag", i: 43, b: false, d: 15 * time.Minute, l: []string{"p", "q"}},
		},
		{
			name: "flags override defaults",
			args: []string{"--s=f", "--i=-1", "--b", "--d=24h", "--l=z"},
			want: values{s: "f", i: -1, b: true, d: 24 * time.Hour, l: []string{"z"}},
		},
		{
			name: "empty string from environment",
			env:  map[string]string{"KEB_TEST_S": ""},
			want: values{s: "", i: 7, d: time.Second, l: []string{"x", "y"}},
		},
		{
			name: "bool spellings",
			env:  map[string]string{"KEB_TEST_B": "1"},
			want: values{s: "default", i: 7, b: true, d: time.Second, l: []string{"x", "y"}},
		},
		{
			name:    "malformed int",
			env:     map[string]string{"KEB_TEST_I": "eighty"},
			want:    defaults,
			wantErr: []string{"KEB_TEST_I", `"eighty"`, "integer"},
		},
		{
			name:    "int with unit",
			env:     map[string]string{"KEB_TEST_I": "8080/tcp"},
			want:    defaults,
			wantErr: []string{"KEB_TEST_I", "8080/tcp"},
		},
		{
			name:    "malformed bool",
			env:     map[string]string{"KEB_TEST_B": "yes please"},
			want:    defaults,
			wantErr: []string{"KEB_TEST_B", `"yes please"`, "boolean"},
		},
		{
			name:    "duration without unit",
			env:     map[string]string{"KEB_TEST_D": "10"},
			want:    defaults,
			wantErr: []string{"KEB_TEST_D", `"10"`, "duration"},
		},
		{
			name:    "malformed duration",
			env:     map[string]string{"KEB_TEST_D": "ten minutes"},
			want:    defaults,
			wantErr: []string{"KEB_TEST_D", "ten minutes"},
		},
		{
			name:    "every malformed variable is named",
			env:     map[string]string{"KEB_TEST_I": "x", "KEB_TEST_B": "y", "KEB_TEST_D": "z", "KEB_TEST_S": "fine"},
			want:    values{s: "fine", i: 7, d: time.Second, l: []string{"x", "y"}},
			wantErr: []string{"KEB_TEST_I", "KEB_TEST_B", "KEB_TEST_D"},
		},
		{
			name: "list from environment is split and trimmed",
			env:  map[string]string{"KEB_TEST_L": "  a , b,, c ,"},
			want: values{s: "default", i: 7, d: time.Second, l: []string{"a", "b", "c"}},
		},
		{
			name: "list flag is split and trimmed",
			args: []string{"-l", " p ,\tq ,, "},
			want: values{s: "default", i: 7, d: time.Second, l: []string{"p", "q"}},
		},
		{
			name: "list of blanks is empty",
			env:  map[string]string{"KEB_TEST_L": " , ,"},
			want: values{s: "default", i: 7, d: time.Second},
		},
		{
			name: "empty list variable is empty",
			env:  map[string]string{"KEB_TEST_L": ""},
			want: values{s: "default", i: 7, d: time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unsetEnv(t, testEnv...)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := newFlagSet()
			v, b := bindValues(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("Parse(%q): %v", tc.args, err)
			}
			if v.s != tc.want.s || v.i != tc.want.i || v.b != tc.want.b || v.d != tc.want.d || !slices.Equal(v.l, tc.want.l) {
				t.Errorf("got %+v, want %+v", *v, tc.want)
			}
			err := b.Err()
			if tc.wantErr == nil {
				if err != nil {
					t.Errorf("Err() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Err() = nil, want the malformed variables named")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Err() = %q, does not mention %s", err, w)
				}
			}
		})
	}
}

func TestBinderUsageNamesVariable(t *testing.T) {
	unsetEnv(t, testEnv...)
	fs := newFlagSet()
	bindValues(fs)
	want := map[string]string{"s": "KEB_TEST_S", "i": "KEB_TEST_I", "b": "KEB_TEST_B", "d": "KEB_TEST_D", "l": "KEB_TEST_L"}
	for name, env := range want {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag -%s not registered", name)
			continue
		}
		if !strings.HasSuffix(f.Usage, "(env "+env+")") {
			t.Errorf("usage of -%s is %q, want it to end with (env %s)", name, f.Usage, env)
		}
	}
	if u := fs.Lookup("l").Usage; !strings.Contains(u, `default "x,y"`) {
		t.Errorf("list usage %q does not show its default", u)
	}
}

func TestBindDatabase(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "nothing set", want: ""},
		{name: "DATABASE_URL only", env: map[string]string{"DATABASE_URL": "postgres://common/db"}, want: "postgres://common/db"},
		{name: "APP_DATABASE_URL only", env: map[string]string{"APP_DATABASE_URL": "postgres://app/db"}, want: "postgres://app/db"},
		{
			name: "APP_DATABASE_URL wins over DATABASE_URL",
			env:  map[string]string{"DATABASE_URL": "postgres://common/db", "APP_DATABASE_URL": "postgres://app/db"},
			want: "postgres://app/db",
		},
		{
			name: "flag wins over both",
			env:  map[string]string{"DATABASE_URL": "postgres://common/db", "APP_DATABASE_URL": "postgres://app/db"},
			args: []string{"--database-url", "postgres://flag/db"},
			want: "postgres://flag/db",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unsetEnv(t, "DATABASE_URL", "APP_DATABASE_URL")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var c config.Config
			fs := newFlagSet()
			b := config.NewBinder(fs)
			c.BindDatabase(b)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if c.DatabaseURL != tc.want {
				t.Errorf("DatabaseURL = %q, want %q", c.DatabaseURL, tc.want)
			}
			if err := b.Err(); err != nil {
				t.Errorf("Err() = %v", err)
			}
		})
	}
}

var envInUsage = regexp.MustCompile(`\(env ([A-Z0-9_]+)\)$`)

// bindServe binds every serve setting with no APP_* variable in the
// environment, and returns the variables it found in the usages.
func bindServe(t *testing.T, set map[string]string, args ...string) (config.Config, *config.Binder, map[string]string) {
	t.Helper()
	// Discover the variables from a first binding, so that a new setting is
	// covered without touching this test.
	probe := newFlagSet()
	var probeCfg config.Config
	probeCfg.BindServe(config.NewBinder(probe))
	flagEnv := map[string]string{}
	probe.VisitAll(func(f *flag.Flag) {
		if m := envInUsage.FindStringSubmatch(f.Usage); m != nil {
			flagEnv[f.Name] = m[1]
		}
	})
	keys := []string{"DATABASE_URL"}
	for _, env := range flagEnv {
		keys = append(keys, env)
	}
	unsetEnv(t, keys...)
	for k, v := range set {
		t.Setenv(k, v)
	}
	var c config.Config
	fs := newFlagSet()
	b := config.NewBinder(fs)
	c.BindServe(b)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("Parse(%q): %v", args, err)
	}
	return c, b, flagEnv
}

func TestBindServeDefaults(t *testing.T) {
	c, b, flagEnv := bindServe(t, nil)
	if err := b.Err(); err != nil {
		t.Fatalf("Err() = %v", err)
	}
	d := config.Defaults
	if c.Host != d.Host || c.Port != d.Port || c.MigrateOnStart != d.MigrateOnStart ||
		c.DefaultRequestRegion != d.DefaultRequestRegion || !slices.Equal(c.EnabledPlans, d.EnabledPlans) ||
		c.OperationTimeout != d.OperationTimeout || c.RetryAfter != d.RetryAfter || c.JWKSRefresh != d.JWKSRefresh ||
		c.ShutdownTimeout != d.ShutdownTimeout || c.LogFormat != "json" || c.LogLevel != d.LogLevel ||
		c.MetricsCensusInterval != d.MetricsCensusInterval {
		// serve logs JSON even on a terminal: its logs go to a collector.
		t.Errorf("bound without environment:\n got %+v\nwant %+v", c, d)
	}
	if c.DatabaseURL != "" || c.DatabaseSecretKey != "" || len(c.DatabaseSecretKeysPrior) != 0 || c.TrustGateway {
		t.Errorf("settings without a default are set: %+v", c)
	}
	// Every serve flag names its variable, and only APP_ ones.
	fs := newFlagSet()
	var c2 config.Config
	c2.BindServe(config.NewBinder(fs))
	fs.VisitAll(func(f *flag.Flag) {
		env, ok := flagEnv[f.Name]
		if !ok {
			t.Errorf("usage of --%s names no environment variable: %q", f.Name, f.Usage)
		} else if !strings.HasPrefix(env, "APP_") {
			t.Errorf("--%s is read from %s, want an APP_ variable", f.Name, env)
		}
	})
	// Defaults plus a database are a valid configuration.
	c.DatabaseURL = "postgres://x/y"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() of the defaults = %v", err)
	}
}

func TestBindServeReadsItsVariables(t *testing.T) {
	tests := []struct {
		name  string
		env   string
		value string
		check func(c config.Config) bool
	}{
		{name: "host", env: "APP_HOST", value: "127.0.0.2", check: func(c config.Config) bool { return c.Host == "127.0.0.2" }},
		{name: "port", env: "APP_PORT", value: "9090", check: func(c config.Config) bool { return c.Port == 9090 }},
		{name: "database URL", env: "APP_DATABASE_URL", value: "postgres://a/b", check: func(c config.Config) bool { return c.DatabaseURL == "postgres://a/b" }},
		{name: "secret key", env: "APP_DATABASE_SECRET_KEY", value: "k", check: func(c config.Config) bool { return c.DatabaseSecretKey == "k" }},
		{name: "previous secret keys", env: "APP_DATABASE_SECRET_KEYS_PREVIOUS", value: "k1, k2", check: func(c config.Config) bool {
			return slices.Equal(c.DatabaseSecretKeysPrior, []string{"k1", "k2"})
		}},
		{name: "migrate off", env: "APP_DATABASE_MIGRATE", value: "false", check: func(c config.Config) bool { return !c.MigrateOnStart }},
		{name: "default request region", env: "APP_BROKER_DEFAULT_REQUEST_REGION", value: "cf-us10", check: func(c config.Config) bool { return c.DefaultRequestRegion == "cf-us10" }},
		{name: "enabled plans", env: "APP_BROKER_ENABLED_PLANS", value: "trial, azure", check: func(c config.Config) bool {
			return slices.Equal(c.EnabledPlans, []string{"trial", "azure"})
		}},
		{name: "plans file", env: "APP_BROKER_PLANS_FILE", value: "/etc/plans.yaml", check: func(c config.Config) bool { return c.PlansFile == "/etc/plans.yaml" }},
		{name: "operation timeout", env: "APP_BROKER_OPERATION_TIMEOUT", value: "2h", check: func(c config.Config) bool { return c.OperationTimeout == 2*time.Hour }},
		{name: "retry after", env: "APP_BROKER_RETRY_AFTER", value: "3s", check: func(c config.Config) bool { return c.RetryAfter == 3*time.Second }},
		{name: "JWKS URLs", env: "APP_AUTH_JWKS_URLS", value: "https://a/jwks,https://b/jwks", check: func(c config.Config) bool {
			return slices.Equal(c.JWKSURLs, []string{"https://a/jwks", "https://b/jwks"})
		}},
		{name: "public key files", env: "APP_AUTH_PUBLIC_KEY_FILES", value: "/k.pem", check: func(c config.Config) bool { return slices.Equal(c.PublicKeyFiles, []string{"/k.pem"}) }},
		{name: "issuer", env: "APP_AUTH_ISSUER", value: "https://iss", check: func(c config.Config) bool { return c.Issuer == "https://iss" }},
		{name: "audience", env: "APP_AUTH_AUDIENCE", value: "keb", check: func(c config.Config) bool { return c.Audience == "keb" }},
		{name: "trust gateway", env: "APP_AUTH_TRUST_GATEWAY", value: "true", check: func(c config.Config) bool { return c.TrustGateway }},
		{name: "JWKS refresh", env: "APP_AUTH_JWKS_REFRESH", value: "1m", check: func(c config.Config) bool { return c.JWKSRefresh == time.Minute }},
		{name: "shutdown delay", env: "APP_SHUTDOWN_DELAY", value: "2s", check: func(c config.Config) bool { return c.ShutdownDelay == 2*time.Second }},
		{name: "shutdown timeout", env: "APP_SHUTDOWN_TIMEOUT", value: "5s", check: func(c config.Config) bool { return c.ShutdownTimeout == 5*time.Second }},
		{name: "log format", env: "APP_LOG_FORMAT", value: "json", check: func(c config.Config) bool { return c.LogFormat == "json" }},
		{name: "log level", env: "APP_LOG_LEVEL", value: "debug", check: func(c config.Config) bool { return c.LogLevel == "debug" }},
		{name: "shoot domain", env: "APP_SHOOT_DOMAIN", value: "kyma.ondemand.com", check: func(c config.Config) bool { return c.Engine.ShootDomain == "kyma.ondemand.com" }},
		{name: "shoot domain by its earlier name", env: "APP_DASHBOARD_DOMAIN", value: "old.example.com", check: func(c config.Config) bool { return c.Engine.ShootDomain == "old.example.com" }},
		{name: "internal plans", env: "APP_KYMA_INTERNAL_PLANS", value: "preview, azure", check: func(c config.Config) bool {
			return slices.Equal(c.Engine.KymaInternal.Plans, []string{"preview", "azure"})
		}},
		{name: "beta global accounts", env: "APP_KYMA_BETA_GLOBAL_ACCOUNTS", value: "ga-1", check: func(c config.Config) bool {
			return slices.Equal(c.Engine.KymaBeta.GlobalAccounts, []string{"ga-1"})
		}},
		{name: "await Kyma", env: "APP_PROVISIONING_AWAIT_KYMA_READY", value: "true", check: func(c config.Config) bool { return c.Engine.AwaitKymaReady }},
		{name: "Kyma timeout", env: "APP_PROVISIONING_KYMA_TIMEOUT", value: "5m", check: func(c config.Config) bool { return c.Engine.KymaTimeout == 5*time.Minute }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, b, _ := bindServe(t, map[string]string{tc.env: tc.value})
			if err := b.Err(); err != nil {
				t.Fatalf("Err() = %v", err)
			}
			if !tc.check(c) {
				t.Errorf("%s=%q not reflected in %+v", tc.env, tc.value, c)
			}
		})
	}
}

func TestBindServeReportsMalformedVariables(t *testing.T) {
	_, b, _ := bindServe(t, map[string]string{
		"APP_PORT":                     "eighty",
		"APP_DATABASE_MIGRATE":         "maybe",
		"APP_BROKER_OPERATION_TIMEOUT": "1 day",
	})
	err := b.Err()
	if err == nil {
		t.Fatal("Err() = nil with three malformed variables")
	}
	for _, env := range []string{"APP_PORT", "APP_DATABASE_MIGRATE", "APP_BROKER_OPERATION_TIMEOUT"} {
		if !strings.Contains(err.Error(), env) {
			t.Errorf("Err() = %q, does not name %s", err, env)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func() config.Config {
		c := config.Defaults
		c.EnabledPlans = slices.Clone(config.Defaults.EnabledPlans)
		c.DatabaseURL = "postgres://keb@localhost/keb"
		return c
	}
	tests := []struct {
		name   string
		modify func(c *config.Config)
		want   []string // substrings of the error; nil means valid
	}{
		{name: "defaults with a database", modify: func(c *config.Config) {}},
		{name: "highest port", modify: func(c *config.Config) { c.Port = 65535 }},
		{name: "port 0 (any free port)", modify: func(c *config.Config) { c.Port = 0 }},
		{name: "negative port", modify: func(c *config.Config) { c.Port = -1 }, want: []string{"port -1", "out of range"}},
		{name: "port above 65535", modify: func(c *config.Config) { c.Port = 65536 }, want: []string{"port 65536", "out of range"}},
		{name: "no database", modify: func(c *config.Config) { c.DatabaseURL = "" }, want: []string{"APP_DATABASE_URL", "DATABASE_URL"}},
		{name: "no plans", modify: func(c *config.Config) { c.EnabledPlans = nil }, want: []string{"APP_BROKER_ENABLED_PLANS"}},
		{name: "empty plan list", modify: func(c *config.Config) { c.EnabledPlans = []string{} }, want: []string{"APP_BROKER_ENABLED_PLANS"}},
		{name: "zero operation timeout", modify: func(c *config.Config) { c.OperationTimeout = 0 }, want: []string{"APP_BROKER_OPERATION_TIMEOUT"}},
		{name: "negative operation timeout", modify: func(c *config.Config) { c.OperationTimeout = -time.Hour }, want: []string{"APP_BROKER_OPERATION_TIMEOUT"}},
		{name: "log format json", modify: func(c *config.Config) { c.LogFormat = "json" }},
		{name: "log format text", modify: func(c *config.Config) { c.LogFormat = "text" }},
		{name: "unknown log format", modify: func(c *config.Config) { c.LogFormat = "xml" }, want: []string{`APP_LOG_FORMAT="xml"`, "auto, json or text"}},
		{name: "empty log format", modify: func(c *config.Config) { c.LogFormat = "" }, want: []string{"APP_LOG_FORMAT"}},
		{name: "log format in capitals", modify: func(c *config.Config) { c.LogFormat = "JSON" }, want: []string{"APP_LOG_FORMAT"}},
		{name: "AVS configured in full", modify: func(c *config.Config) {
			c.AVS = avs.Config{APIEndpoint: "https://avs.example.com/api/v2/evaluationmetadata", OAuthTokenEndpoint: "https://avs.example.com/oauth/token",
				OAuthClientID: "c", OAuthUsername: "u", InternalTesterAccessID: 1, ExternalTesterAccessID: 2, GroupID: 3, ParentID: 4}
		}},
		{name: "AVS without its IDs", modify: func(c *config.Config) {
			c.AVS = avs.Config{APIEndpoint: "https://avs.example.com/api", OAuthTokenEndpoint: "https://avs.example.com/token", OAuthClientID: "c", OAuthUsername: "u"}
		}, want: []string{"APP_AVS_PARENT_ID"}},
		{name: "AVS with a relative token URL", modify: func(c *config.Config) {
			c.AVS = avs.Config{APIEndpoint: "https://avs.example.com/api", OAuthTokenEndpoint: "/token", Disabled: true, OAuthClientID: "c", OAuthUsername: "u"}
		}, want: []string{"APP_AVS_OAUTH_TOKEN_ENDPOINT"}},
		{name: "AVS exemptions file missing", modify: func(c *config.Config) {
			c.AVS = avs.Config{APIEndpoint: "https://avs.example.com/api", OAuthTokenEndpoint: "https://avs.example.com/token", Disabled: true,
				OAuthClientID: "c", OAuthUsername: "u", MaintenanceExemptionsFile: "/nonexistent/exemptions.yaml"}
		}, want: []string{"APP_AVS_MAINTENANCE_MODE_DURING_UPGRADE_ALWAYS_DISABLED_GLOBAL_ACCOUNTS_FILE_PATH"}},
		{name: "EDP without a secret", modify: func(c *config.Config) {
			c.EDP = edp.Config{AdminURL: "https://edp.example.com", AuthURL: "https://edp.example.com", Namespace: "kyma-dev", Environment: "prod"}
		}, want: []string{"APP_EDP_SECRET"}},
		{name: "EDP disabled needs nothing", modify: func(c *config.Config) { c.EDP = edp.Config{AdminURL: "https://edp.example.com", Disabled: true} }},
		{name: "IAS without an identity provider", modify: func(c *config.Config) {
			c.IAS = ias.Config{URL: "https://ias.example.com", UserID: "u", UserSecret: "p"}
		}, want: []string{"APP_IAS_IDENTITY_PROVIDER"}},
		{name: "IAS URL not http", modify: func(c *config.Config) {
			c.IAS = ias.Config{URL: "ftp://ias.example.com", UserID: "u", UserSecret: "p", IdentityProvider: "idp"}
		}, want: []string{"APP_IAS_URL"}},
		{name: "IAS disabled needs nothing", modify: func(c *config.Config) { c.IAS = ias.Config{URL: "https://ias.example.com", Disabled: true} }},
		{name: "LMS without a token", modify: func(c *config.Config) {
			c.LMS = lms.Config{URL: "https://lms.example.com", ClusterType: "ha", Environment: "dev", EnabledForGlobalAccounts: "all"}
		}, want: []string{"APP_LMS_TOKEN"}},
		{name: "LMS with an unknown cluster type", modify: func(c *config.Config) {
			c.LMS = lms.Config{URL: "https://lms.example.com", Token: "t", ClusterType: "big", Environment: "dev", EnabledForGlobalAccounts: "all"}
		}, want: []string{"APP_LMS_CLUSTER_TYPE"}},
		{name: "LMS for no global account needs nothing", modify: func(c *config.Config) {
			c.LMS = lms.Config{URL: "https://lms.example.com", EnabledForGlobalAccounts: "none"}
		}},
		{name: "Director without a token URL", modify: func(c *config.Config) {
			c.Director = director.Config{URL: "https://compass.example.com/director/graphql", OAuthClientID: "c"}
		}, want: []string{"APP_DIRECTOR_OAUTH_TOKEN_URL"}},
		{
			name: "every problem is reported",
			modify: func(c *config.Config) {
				c.Port, c.DatabaseURL, c.EnabledPlans, c.LogFormat = 70000, "", nil, "yaml"
			},
			want: []string{"port 70000", "APP_DATABASE_URL", "APP_BROKER_ENABLED_PLANS", "APP_LOG_FORMAT"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := valid()
			tc.modify(&c)
			err := c.Validate()
			if tc.want == nil {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, does not mention %s", err, w)
				}
			}
		})
	}
}
