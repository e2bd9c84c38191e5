package main

import (
	"context"
	"flag"
	"os"
	"slices"
	"time"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack"
	"github.com/kyma-keb/keb/internal/infrasim"
)

func devCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	var cfg config.Config
	var dir, binDir, mode, faults string
	var delay, accountCleanupDelay time.Duration
	lifecycleManager, avsStandIn, edpStandIn, directorStandIn, iasStandIn, lmsStandIn := true, true, true, true, true, true
	b := config.NewBinder(fs)
	b.String(&cfg.Host, "host", "APP_HOST", "127.0.0.1", "address to listen on")
	b.Int(&cfg.Port, "port", "APP_PORT", 8080, "HTTP port")
	b.String(&dir, "dir", "APP_DEV_DIR", ".keb", "directory for dev state: PostgreSQL data, signing key, client, secret key")
	b.String(&binDir, "k8s-bin-dir", "APP_DEV_K8S_BIN_DIR", "bin/k8s", "kube-apiserver and etcd for the local control plane and runtimes (make k8s-bins)")
	b.Duration(&delay, "runtime-delay", "APP_DEV_RUNTIME_DELAY", 5*time.Second, "how long the simulated infrastructure manager takes to create a cluster")
	b.String(&mode, "runtime-mode", "APP_DEV_RUNTIME_MODE", string(infrasim.ModeDedicated), "dedicated (an apiserver per runtime) or shared (one for all)")
	b.String(&faults, "runtime-faults", "APP_DEV_RUNTIME_FAULTS", devRuntimeFaults,
		"Gardener errors the simulated infrastructure manager injects: comma-separated transient or permanent, each optionally =<subaccount ID> (transient: every creation and change fails once, then recovers; \"\": none)")
	b.Duration(&accountCleanupDelay, "account-cleanup-delay", "APP_DEV_ACCOUNT_CLEANUP_DELAY", 5*time.Minute,
		"how long a released (dirty) dev account stays dirty before the simulated account cleaner empties it and returns it to the pool, as the landscape's cleaner does (0: never; then `keb pool release NAME` returns it)")
	b.Bool(&lifecycleManager, "lifecycle-manager", "APP_DEV_LIFECYCLE_MANAGER", true,
		"run the simulated Lifecycle Manager (false: for a real one, or to measure keb alone; then no module is installed, and a provisioning with credentials and the btp-operator module waits for the BtpOperator kind)")
	b.Bool(&avsStandIn, "avs-stand-in", "APP_DEV_AVS", true,
		"run the AVS stand-in and create each runtime's AVS evaluations there (ignored when APP_AVS_API_ENDPOINT names an AVS)")
	b.Bool(&edpStandIn, "edp-stand-in", "APP_DEV_EDP", true,
		"run the EDP stand-in and register each runtime's subaccount there (ignored when APP_EDP_ADMIN_URL names an EDP)")
	b.Bool(&directorStandIn, "director-stand-in", "APP_DEV_DIRECTOR", true,
		"run the Director stand-in (answering from the control plane's Runtime CRs) and check each runtime's dashboard URL there (ignored when APP_DIRECTOR_URL names a Director)")
	b.Bool(&iasStandIn, "ias-stand-in", "APP_DEV_IAS", true,
		"run the IAS stand-in and register each runtime's Grafana there (ignored when APP_IAS_URL names an IAS)")
	b.Bool(&lmsStandIn, "lms-stand-in", "APP_DEV_LMS", true,
		"run the LMS stand-in and get each runtime's global account a logging tenant there (ignored when APP_LMS_URL names an LMS)")
	cfg.BindDatabase(b)
	b.String(&cfg.DatabaseSecretKey, "database-secret-key", "APP_DATABASE_SECRET_KEY", "",
		"32-byte key sealing secrets at rest (default: generated once into <dir>/secret-key)")
	cfg.BindBroker(b)
	cfg.BindEngine(b)
	cfg.BindCleanup(b)
	cfg.BindCommon(b)
	return func(ctx context.Context, _ []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		devCleanupInterval(fs, &cfg)
		devEnabledPlans(fs, &cfg)
		// Checked here too: a malformed spec fails before PostgreSQL and a
		// control plane were started for nothing.
		if _, err := infrasim.ParseFaults(faults); err != nil {
			return err
		}
		cfg.MigrateOnStart = true
		log, err := newLogger(cfg.LogFormat, cfg.LogLevel)
		if err != nil {
			return err
		}
		logUpstreamSettings(log, b)
		return devstack.Run(ctx, devstack.Options{Dir: dir, Config: cfg, Out: os.Stdout, K8sBinDir: binDir,
			RuntimeDelay: delay, RuntimeMode: infrasim.Mode(mode), RuntimeFaults: faults, NoLifecycleManager: !lifecycleManager,
			AccountCleanupDelay: accountCleanupDelay, NoAVS: !avsStandIn, NoEDP: !edpStandIn, NoDirector: !directorStandIn, NoIAS: !iasStandIn, NoLMS: !lmsStandIn}, log)
	}
}

// devSubaccountCleanupInterval is how often `keb dev` reads its CIS
// stand-in unless told otherwise: production's hour is too long to watch a
// deleted subaccount's instance go.
const devSubaccountCleanupInterval = 10 * time.Second

func devCleanupInterval(fs *flag.FlagSet, cfg *config.Config) {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "subaccount-cleanup-interval" })
	if _, env := os.LookupEnv("APP_SUBACCOUNT_CLEANUP_INTERVAL"); !set && !env {
		cfg.Cleanup.SubaccountInterval = devSubaccountCleanupInterval
	}
}

// devRuntimeFaults are the failures `keb dev`'s infrastructure manager injects unless told otherwise: only
// into the runtimes of two subaccounts reserved for it, so that the README's walkthrough can show a
// failing cluster on `make run` without touching any other runtime.
const devRuntimeFaults = "transient=sa-flaky,permanent=sa-broken"

// devEnabledPlans adds the free plan to the catalog of `keb dev` unless the plans are set: production
// leaves it off by default (upstream offers it only where configured), a simulator should show every plan
// the walkthrough uses.
func devEnabledPlans(fs *flag.FlagSet, cfg *config.Config) {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "enabled-plans" })
	if !set && !config.IsSet("APP_BROKER_ENABLED_PLANS") && !slices.Contains(cfg.EnabledPlans, "free") {
		cfg.EnabledPlans = append(slices.Clone(cfg.EnabledPlans), "free")
	}
}
