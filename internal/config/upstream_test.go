package config_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/config"
)

// unsetUpstream clears every variable of upstream's chart and keb's names
// they stand for, so that the machine's environment cannot leak in.
func unsetUpstream(t *testing.T) {
	t.Helper()
	for _, s := range config.UpstreamSettings {
		unsetEnv(t, s.Name)
		if s.Keb != "" {
			unsetEnv(t, s.Keb)
		}
	}
	unsetEnv(t, "DATABASE_URL", "APP_DATABASE_URL")
}

func outcomes(notes []config.UpstreamNote) map[string]config.UpstreamNote {
	out := map[string]config.UpstreamNote{}
	for _, n := range notes {
		out[n.Upstream] = n
	}
	return out
}

// TestUpstreamSettingNames: an operator's environment from upstream KEB's
// chart starts keb with the same meaning, keb's own name winning where both
// are set, and every name keb cannot honour is reported, not dropped.
func TestUpstreamSettingNames(t *testing.T) {
	unsetUpstream(t)
	env := map[string]string{}
	for k, v := range map[string]string{
		"APP_BROKER_ENABLE_PLANS":                         "azure,aws,trial",
		"APP_BROKER_PORT":                                 "9090",
		"APP_BROKER_BINDING_EXPIRATION_SECONDS":           "900",
		"APP_BROKER_BINDING_MAX_BINDINGS_COUNT":           "4",
		"APP_BROKER_FREE_EXPIRATION_PERIOD":               "720h",
		"APP_GARDENER_SHOOT_DOMAIN":                       "kyma.example.com",
		"APP_STEP_TIMEOUTS_CHECK_RUNTIME_RESOURCE_CREATE": "60m",
		"APP_BROKER_TRIAL_DOCS_URL":                       "https://upstream.example/trial",
		"APP_TRIAL_DOCS_URL":                              "https://keb.example/trial",
		"APP_DATABASE_HOST":                               "db.example",
		"APP_DATABASE_PORT":                               "5433",
		"APP_DATABASE_NAME":                               "broker",
		"APP_DATABASE_USER":                               "keb",
		"APP_DATABASE_PASSWORD":                           "p@ss/word",
		"APP_DATABASE_SSLMODE":                            "verify-full",
		"APP_DATABASE_SSLROOTCERT":                        "/secrets/root.crt",
		"APP_UPDATE_WORKERS_AMOUNT":                       "5",
		"APP_INFRASTRUCTURE_MANAGER_KUBERNETES_VERSION":   "1.33",
		"APP_BROKER_DEFAULT_REQUEST_REGION":               "cf-us10", // the same name in both
	} {
		env[k] = v
	}
	cfg, b, _ := bindServe(t, env)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.EnabledPlans, []string{"azure", "aws", "trial"}) || cfg.Port != 9090 ||
		cfg.Binding.DefaultExpiration != 900*time.Second || cfg.Binding.MaxPerInstance != 4 ||
		cfg.FreeDuration != 720*time.Hour || cfg.Engine.ShootDomain != "kyma.example.com" ||
		cfg.Engine.RuntimeTimeout != time.Hour || cfg.DefaultRequestRegion != "cf-us10" {
		t.Errorf("upstream's values not read: %+v", cfg)
	}
	if cfg.TrialDocsURL != "https://keb.example/trial" {
		t.Errorf("TrialDocsURL = %q: keb's own name must win", cfg.TrialDocsURL)
	}
	if want := "postgres://keb:p%40ss%2Fword@db.example:5433/broker?sslmode=verify-full&sslrootcert=%2Fsecrets%2Froot.crt"; cfg.DatabaseURL != want {
		t.Errorf("DatabaseURL = %q, want %q", cfg.DatabaseURL, want)
	}

	got := outcomes(b.UpstreamReport())
	want := map[string]string{
		"APP_BROKER_ENABLE_PLANS":                       "read upstream KEB's APP_BROKER_ENABLE_PLANS as APP_BROKER_ENABLED_PLANS",
		"APP_BROKER_TRIAL_DOCS_URL":                     "ignored upstream KEB's APP_BROKER_TRIAL_DOCS_URL: keb's own APP_TRIAL_DOCS_URL is set too, and wins",
		"APP_DATABASE_PASSWORD":                         "read upstream KEB's APP_DATABASE_PASSWORD as APP_DATABASE_URL",
		"APP_UPDATE_WORKERS_AMOUNT":                     "ignored upstream KEB's APP_UPDATE_WORKERS_AMOUNT: keb has no setting of that meaning; keb has one pool of workers for every kind of operation: APP_WORKERS",
		"APP_INFRASTRUCTURE_MANAGER_KUBERNETES_VERSION": "ignored upstream KEB's APP_INFRASTRUCTURE_MANAGER_KUBERNETES_VERSION: keb has no setting of that meaning",
	}
	for name, msg := range want {
		if got[name].Message() != msg {
			t.Errorf("%s: %q, want %q", name, got[name].Message(), msg)
		}
	}
	if n, has := got["APP_BROKER_DEFAULT_REQUEST_REGION"]; has {
		t.Errorf("a setting keb has under the same name is reported: %v", n)
	}
	// Every upstream variable set is in the report once, or is keb's own.
	if len(got) != 17 {
		t.Errorf("report has %d entries, want 17: %v", len(got), got)
	}
	for _, n := range b.UpstreamReport() {
		if strings.Contains(n.Message(), "p@ss") {
			t.Errorf("the report shows the database password: %s", n.Message())
		}
	}
}

// TestUpstreamAliasPrecedence: keb's own names win over upstream's, for the
// database URL too, and a malformed upstream value is named.
func TestUpstreamAliasPrecedence(t *testing.T) {
	unsetUpstream(t)
	cfg, b, _ := bindServe(t, map[string]string{"APP_DATABASE_HOST": "upstream.example",
		"DATABASE_URL": "postgres://own@localhost/keb", "APP_BROKER_PORT": "9090", "APP_PORT": "8081"})
	if cfg.DatabaseURL != "postgres://own@localhost/keb" || cfg.Port != 8081 {
		t.Errorf("keb's own names lost: %q, %d", cfg.DatabaseURL, cfg.Port)
	}
	got := outcomes(b.UpstreamReport())
	if got["APP_DATABASE_HOST"].Outcome != config.UpstreamOverridden || got["APP_BROKER_PORT"].Outcome != config.UpstreamOverridden {
		t.Errorf("report: %v", got)
	}

	unsetUpstream(t)
	_, b, _ = bindServe(t, map[string]string{"APP_BROKER_BINDING_MIN_EXPIRATION_SECONDS": "ten minutes"})
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "APP_BROKER_BINDING_MIN_EXPIRATION_SECONDS") {
		t.Errorf("malformed upstream value: %v", err)
	}
}

// TestUpstreamSettingsTable keeps the one table of upstream's names true
// to what keb binds: an alias names a setting keb binds under another
// name; a name without alias or note is one keb binds itself; a name with a
// note is one keb does not bind (were it bound now, the note would be stale).
func TestUpstreamSettingsTable(t *testing.T) {
	unsetUpstream(t)
	_, b, _ := bindServe(t, nil)
	bound := b.Envs()
	seen := map[string]bool{}
	for _, s := range config.UpstreamSettings {
		if seen[s.Name] {
			t.Errorf("%s is in the table twice", s.Name)
		}
		seen[s.Name] = true
		switch {
		case s.Keb != "" && (!slices.Contains(bound, s.Keb) || slices.Contains(bound, s.Name)):
			t.Errorf("%s: alias of %s, which keb serve does not bind, or keb binds %s itself", s.Name, s.Keb, s.Name)
		case s.Keb == "" && s.Note == "" && !slices.Contains(bound, s.Name):
			t.Errorf("%s: neither alias nor note, but keb serve does not bind it", s.Name)
		case s.Note != "" && slices.Contains(bound, s.Name):
			t.Errorf("%s: keb binds it now; its note %q is stale", s.Name, s.Note)
		}
	}
	if len(config.UpstreamSettings) != 112 {
		t.Errorf("%d of upstream's settings, the reference lists 112", len(config.UpstreamSettings))
	}
}

// TestUpstreamSettingsDocumented: the configuration reference lists every
// one of upstream's names with what keb makes of it.
func TestUpstreamSettingsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/guide/13-configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "## Upstream KEB's setting names")
	if !ok {
		t.Fatal("docs/guide/13-configuration.md has no section on upstream's setting names")
	}
	rows := map[string]string{}
	for _, l := range strings.Split(section, "\n") {
		if cells := strings.Split(l, "|"); len(cells) > 3 {
			rows[strings.Trim(cells[1], " `")] = cells[2]
		}
	}
	for _, s := range config.UpstreamSettings {
		row, ok := rows[s.Name]
		switch {
		case !ok:
			t.Errorf("%s is not listed", s.Name)
		case s.Keb != "" && !strings.Contains(row, "`"+s.Keb+"`"):
			t.Errorf("%s: the row %q does not name keb's %s", s.Name, row, s.Keb)
		case s.Keb == "" && s.Note == "" && !strings.Contains(row, "same"):
			t.Errorf("%s: the row %q does not say keb reads it under the same name", s.Name, row)
		}
	}
}
