package simstack

import (
	"flag"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/edp"
)

// startAll starts the four HTTP stand-ins and returns their settings.
func startAll(t *testing.T) Settings {
	t.Helper()
	all := Settings{}
	for _, start := range []func() (Settings, func(), error){
		func() (Settings, func(), error) { return startAVS("127.0.0.1") },
		func() (Settings, func(), error) { return startEDP("127.0.0.1", config.DefaultEDPNamespace) },
		func() (Settings, func(), error) { return startIAS("127.0.0.1") },
		func() (Settings, func(), error) {
			return startDirector("127.0.0.1", "kyma.example.com", fake.NewClientBuilder().Build())
		},
	} {
		s, stop, err := start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		for k, v := range s {
			all[k] = v
		}
	}
	return all
}

// The settings file keb sim writes is what an operator sources before keb
// serve: read back by keb dev and applied, it gives the configuration keb
// serve binds from the same variables, integration by integration.
func TestSettingsAreKebServesVariables(t *testing.T) {
	s := startAll(t)
	path := filepath.Join(t.TempDir(), SettingsFile)
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	read, err := ReadSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, s) {
		t.Fatalf("read back %v, wrote %v", read, s)
	}
	var applied config.Config
	applied.BindEngine(config.NewBinder(flag.NewFlagSet("dev", flag.ContinueOnError)))
	if err := read.Apply(&applied); err != nil {
		t.Fatal(err)
	}
	for k, v := range read {
		t.Setenv(k, v)
	}
	var bound config.Config
	b := config.NewBinder(flag.NewFlagSet("serve", flag.ContinueOnError))
	bound.BindEngine(b)
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]any{"AVS": {applied.AVS, bound.AVS}, "EDP": {applied.EDP, bound.EDP},
		"IAS": {applied.IAS, bound.IAS}, "Director": {applied.Director, bound.Director}} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: keb dev applies\n%+v\nkeb serve binds\n%+v", name, pair[0], pair[1])
		}
	}
	if !applied.AVS.Configured() || !applied.Director.Configured() || applied.EDP.AdminURL == "" || applied.IAS.URL == "" {
		t.Errorf("an integration is not configured after Apply: %+v", applied)
	}
	if err := (Settings{"APP_AVS_GROUP_ID": "forty"}).Apply(&applied); err == nil {
		t.Error("a malformed ID was applied without an error")
	}
	if err := (Settings{"APP_DATABASE_URL": "postgres://elsewhere"}).Apply(&applied); err == nil {
		t.Error("a setting keb dev must not take from the stand-ins was applied")
	}
}

// The credentials in the settings are the ones the stand-in accepts: keb's
// EDP client configured from them registers a data tenant, and one with
// another secret is refused.
func TestSettingsReachTheStandIns(t *testing.T) {
	var cfg config.Config
	cfg.BindEngine(config.NewBinder(flag.NewFlagSet("dev", flag.ContinueOnError)))
	if err := startAll(t).Apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if err := edp.NewClient(cfg.EDP, nil, nil).CreateDataTenant(t.Context(), "sa-1"); err != nil {
		t.Fatalf("EDP client with the stand-in's settings: %v", err)
	}
	wrong := cfg.EDP
	wrong.Secret = "not-the-secret"
	if err := edp.NewClient(wrong, nil, nil).CreateDataTenant(t.Context(), "sa-2"); err == nil {
		t.Fatal("EDP client with another secret registered a data tenant")
	}
}
