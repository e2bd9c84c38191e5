// Package simstack is `keb sim`: the stand-ins for what surrounds keb in a
// landscape, run as one process of their own against a control plane, as
// the real services are other processes. It runs the simulated
// infrastructure manager (internal/infrasim: a local kube-apiserver per
// runtime), Lifecycle Manager (internal/lmsim) and account cleaner against
// the control plane's CRs, and serves the HTTP stand-ins of AVS, EDP, IAS
// and the Director, each on a port of its own. keb reaches them only through
// the control plane and the Settings file, which `keb dev` reads and an
// operator sources before `keb serve`.
package simstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/gardener"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/internal/lmsim"
	"github.com/kyma-keb/keb/internal/procguard"
)

// SettingsFile is the file in Options.Dir that holds the running stand-ins'
// Settings; it appears once every stand-in answers and goes when they stop.
const SettingsFile = "sim.env"

// Options configure `keb sim`.
type Options struct {
	// Kubeconfig is the control plane's (Runtime and Kyma CRs, the
	// account pool's bindings).
	Kubeconfig string
	// Dir holds the Settings file and, with Guard, the watchdog's state.
	Dir string
	// Guard ties the runtimes' clusters (kube-apiservers, etcd) to this
	// process with a watchdog (internal/procguard), even through a SIGKILL;
	// `keb dev` turns it off: it guards its descendants, the stand-ins' among them.
	Guard bool
	// Host is where the HTTP stand-ins listen (a port each).
	Host string
	// BinDir holds kube-apiserver and etcd for the runtimes' clusters.
	BinDir string
	// RuntimeDelay is how long the simulated infrastructure manager takes
	// to create a cluster; RuntimeMode says whether each runtime gets its
	// own (dedicated) or all share one (shared).
	RuntimeDelay time.Duration
	RuntimeMode  infrasim.Mode
	// RuntimeFaults are the failures the simulated infrastructure manager
	// injects (infrasim.ParseFaults's spec; "": none).
	RuntimeFaults string
	// NoLifecycleManager leaves the simulated Lifecycle Manager out.
	NoLifecycleManager bool
	// AccountCleanupDelay is how long a released (dirty) account stays dirty
	// before the simulated account cleaner hands it back (0: never).
	AccountCleanupDelay time.Duration
	// NoAVS, NoEDP, NoIAS, NoLMS and NoDirector leave that HTTP stand-in out.
	NoAVS, NoEDP, NoIAS, NoLMS, NoDirector bool
	// keb's settings the stand-ins must agree with: the account pool's
	// project and kind (APP_GARDENER_PROJECT, APP_HAP_POOL_KIND), the
	// runtimes' domain (APP_SHOOT_DOMAIN) and keb's EDP namespace
	// (APP_EDP_NAMESPACE).
	GardenerProject, PoolKind, ShootDomain, EDPNamespace string
}

// Run starts the stand-ins, writes their Settings to Options.Dir once all
// of them answer, and runs them until ctx is done or one of them fails.
func Run(ctx context.Context, opts Options, log logrus.FieldLogger) error {
	began := time.Now()
	faults, err := infrasim.ParseFaults(opts.RuntimeFaults)
	if err != nil {
		return err
	}
	poolKind, err := hyperscaler.ParseKind(opts.PoolKind)
	if err != nil {
		return fmt.Errorf("--hap-pool-kind: %w", err)
	}
	if opts.Kubeconfig == "" {
		return errors.New("no control plane: give its kubeconfig with --kcp-kubeconfig, APP_KCP_KUBECONFIG or KUBECONFIG")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return fmt.Errorf("creating the stand-ins' directory: %w", err)
	}
	settingsPath := filepath.Join(opts.Dir, SettingsFile)
	// A file an earlier, killed run left would name stand-ins that are gone.
	if err := os.Remove(settingsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if opts.Guard {
		if err := procguard.Start(opts.Dir); err != nil {
			return err
		}
	}
	kcp, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the control plane's kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	scheme, err := app.Scheme()
	if err != nil {
		return err
	}
	kc, err := client.New(kcp, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("control-plane client: %w", err)
	}
	binDir, err := filepath.Abs(opts.BinDir)
	if err != nil {
		return err
	}
	poolNamespace := gardener.ProjectNamespace(opts.GardenerProject)
	// Runtimes start without CRDs, as real ones do: Lifecycle Manager
	// installs the BtpOperator CRD with the btp-operator module.
	sim, err := infrasim.New(kcp, scheme, infrasim.Options{
		Namespace: controlplane.Namespace, Delay: opts.RuntimeDelay, Mode: opts.RuntimeMode,
		BinDir: binDir, Log: log.WithField("component", "infrasim"), Faults: faults,
		RuntimeCRDs: []*apiextensionsv1.CustomResourceDefinition{},
		Gardener:    &infrasim.Gardener{Namespace: poolNamespace, Binding: poolKind.GroupVersionKind()},
	})
	if err != nil {
		return fmt.Errorf("simulated infrastructure manager: %w", err)
	}
	// Modules install as soon as the runtime is there: the cluster's delay
	// is the one wait.
	controllers := []interface{ Start(context.Context) error }{sim}
	if !opts.NoLifecycleManager {
		lm, err := lmsim.New(kcp, scheme, lmsim.Options{Namespace: controlplane.Namespace,
			Log: log.WithField("component", "lmsim")})
		if err != nil {
			return fmt.Errorf("simulated Lifecycle Manager: %w", err)
		}
		controllers = append(controllers, lm)
	}
	if opts.AccountCleanupDelay > 0 {
		controllers = append(controllers, &infrasim.AccountCleaner{Delay: opts.AccountCleanupDelay,
			Pool: hyperscaler.NewAccountPool(kc, poolKind, poolNamespace, nil),
			Log:  log.WithField("component", "account-cleaner")})
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, len(controllers))
	for _, c := range controllers {
		go func() { done <- c.Start(runCtx) }()
	}
	defer func() {
		stop()
		for range controllers {
			if err := <-done; err != nil {
				log.WithError(err).Warn("a simulated controller stopped")
			}
		}
	}()

	host := standInHost(opts.Host)
	settings := Settings{}
	var stops []func()
	defer func() {
		for _, stopIt := range stops {
			stopIt()
		}
	}()
	start := func(skip bool, name string, f func() (Settings, func(), error)) error {
		if skip {
			return nil
		}
		s, stopIt, err := f()
		if err != nil {
			return err
		}
		stops = append(stops, stopIt)
		for k, v := range s {
			settings[k] = v
		}
		log.WithField("url", firstURL(s)).Infof("%s stand-in started", name)
		return nil
	}
	if err := errors.Join(
		start(opts.NoAVS, "AVS", func() (Settings, func(), error) { return startAVS(host) }),
		start(opts.NoEDP, "EDP", func() (Settings, func(), error) { return startEDP(host, opts.EDPNamespace) }),
		start(opts.NoIAS, "IAS", func() (Settings, func(), error) { return startIAS(host) }),
		start(opts.NoLMS, "LMS", func() (Settings, func(), error) { return startLMS(host) }),
		start(opts.NoDirector, "Director", func() (Settings, func(), error) { return startDirector(host, opts.ShootDomain, kc) }),
	); err != nil {
		return err
	}
	if err := settings.WriteFile(settingsPath); err != nil {
		return err
	}
	defer os.Remove(settingsPath)
	log.WithField("settings", settingsPath).Infof("stand-ins ready in %s", time.Since(began).Round(10*time.Millisecond))
	select {
	case <-ctx.Done():
		return nil
	case err := <-done:
		// One controller ended before it was asked to: the runtimes it
		// serves would wait forever, so the stand-ins stop and say why.
		done <- nil // its place in the deferred drain
		if err == nil {
			err = errors.New("it returned")
		}
		return fmt.Errorf("a simulated controller stopped: %w", err)
	}
}

// firstURL is the stand-in's address among its settings, for the log.
func firstURL(s Settings) string {
	for _, k := range []string{envAVSAPIEndpoint, envEDPAdminURL, envIASURL, envLMSURL, envDirectorURL} {
		if v := s[k]; v != "" {
			return v
		}
	}
	return ""
}

// standInHost is where the stand-ins listen: loopback when host is every
// interface or empty.
func standInHost(host string) string {
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return host
}

// newSecret is a stand-in's password or client secret, new on every start.
func newSecret(standIn string) (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generating the %s stand-in's secret: %w", standIn, err)
	}
	return hex.EncodeToString(raw), nil
}
