package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/simstack"
)

// simCommand is `keb sim`: the stand-ins as a process of their own, the one
// `keb dev` starts, or on its own against a control plane of one's choice.
func simCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	var opts simstack.Options
	var logFormat, logLevel, mode string
	lifecycleManager, avsStandIn, edpStandIn, directorStandIn, iasStandIn, lmsStandIn := true, true, true, true, true, true
	b := config.NewBinder(fs)
	b.String(&opts.Kubeconfig, "kcp-kubeconfig", "APP_KCP_KUBECONFIG", os.Getenv("KUBECONFIG"),
		"kubeconfig of the control plane whose Runtime and Kyma CRs the stand-ins serve (it needs keb's CRDs and the namespace kcp-system); KUBECONFIG is used when unset")
	b.String(&opts.Dir, "dir", "APP_SIM_DIR", ".keb/sim",
		"directory for the stand-ins' state: "+simstack.SettingsFile+", the settings keb serve needs to reach them (source it: set -a; . DIR/"+simstack.SettingsFile+"; set +a)")
	b.Bool(&opts.Guard, "guard", "APP_SIM_GUARD", true,
		"stop the runtimes' clusters when keb sim dies, even by SIGKILL (keb dev passes false: it guards its children itself)")
	b.String(&opts.Host, "host", "APP_SIM_HOST", "127.0.0.1", "address the HTTP stand-ins listen on, each on a free port")
	b.String(&opts.BinDir, "k8s-bin-dir", "APP_DEV_K8S_BIN_DIR", "bin/k8s", "kube-apiserver and etcd for the runtimes' clusters (make k8s-bins)")
	b.Duration(&opts.RuntimeDelay, "runtime-delay", "APP_DEV_RUNTIME_DELAY", 5*time.Second, "how long the simulated infrastructure manager takes to create a cluster")
	b.String(&mode, "runtime-mode", "APP_DEV_RUNTIME_MODE", string(infrasim.ModeDedicated), "dedicated (an apiserver per runtime) or shared (one for all)")
	b.String(&opts.RuntimeFaults, "runtime-faults", "APP_DEV_RUNTIME_FAULTS", "",
		"Gardener errors the simulated infrastructure manager injects: comma-separated transient or permanent, each optionally =<subaccount ID> (transient: every creation and change fails once, then recovers; \"\": none)")
	b.Duration(&opts.AccountCleanupDelay, "account-cleanup-delay", "APP_DEV_ACCOUNT_CLEANUP_DELAY", 5*time.Minute,
		"how long a released (dirty) account stays dirty before the simulated account cleaner empties it and returns it to the pool (0: never)")
	b.Bool(&lifecycleManager, "lifecycle-manager", "APP_DEV_LIFECYCLE_MANAGER", true, "run the simulated Lifecycle Manager")
	b.Bool(&avsStandIn, "avs-stand-in", "APP_DEV_AVS", true, "run the AVS stand-in")
	b.Bool(&edpStandIn, "edp-stand-in", "APP_DEV_EDP", true, "run the EDP stand-in")
	b.Bool(&directorStandIn, "director-stand-in", "APP_DEV_DIRECTOR", true, "run the Director stand-in (answering from the control plane's Runtime CRs)")
	b.Bool(&iasStandIn, "ias-stand-in", "APP_DEV_IAS", true, "run the IAS stand-in")
	b.Bool(&lmsStandIn, "lms-stand-in", "APP_DEV_LMS", true, "run the LMS stand-in")
	d := config.Defaults
	b.String(&opts.GardenerProject, "gardener-project", "APP_GARDENER_PROJECT", d.Engine.GardenerProject,
		"keb's account pool project: the accounts' bindings live in namespace garden-<project>")
	b.String(&opts.PoolKind, "hap-pool-kind", "APP_HAP_POOL_KIND", d.Engine.HAP.PoolKind,
		"keb's account pool kind: CredentialsBinding, SecretBinding or Secret")
	b.String(&opts.ShootDomain, "shoot-domain", "APP_SHOOT_DOMAIN", d.Engine.ShootDomain,
		"keb's runtime domain, for the Director stand-in's console URLs")
	b.String(&opts.EDPNamespace, "edp-namespace", "APP_EDP_NAMESPACE", config.DefaultEDPNamespace, "keb's EDP namespace, the EDP stand-in's client")
	b.String(&logFormat, "log-format", "APP_LOG_FORMAT", d.LogFormat, "auto (text on a terminal, else JSON), json or text")
	b.String(&logLevel, "log-level", "APP_LOG_LEVEL", d.LogLevel, "debug, info, warn or error")
	return func(ctx context.Context, _ []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		opts.RuntimeMode = infrasim.Mode(mode)
		opts.NoLifecycleManager, opts.NoAVS, opts.NoEDP, opts.NoDirector, opts.NoIAS, opts.NoLMS =
			!lifecycleManager, !avsStandIn, !edpStandIn, !directorStandIn, !iasStandIn, !lmsStandIn
		log, err := newLogger(logFormat, logLevel)
		if err != nil {
			return err
		}
		return simstack.Run(ctx, opts, log)
	}
}
