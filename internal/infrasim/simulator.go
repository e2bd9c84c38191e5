// Package infrasim is keb's simulated infrastructure manager: it watches
// Runtime CRs in the control plane and, like the real one, gives each a
// cluster, publishes its kubeconfig Secret and reports status. The clusters
// are local kube-apiservers. `keb sim` (a process of its own, `keb dev`'s child) and the tests run it.
package infrasim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/logging"
)

// Mode says how runtimes get clusters.
type Mode string

const (
	// ModeDedicated gives every runtime its own kube-apiserver and etcd
	// (~3 s and ~330 MB each): runtimes are isolated, as real ones are.
	ModeDedicated Mode = "dedicated"
	// ModeShared starts one kube-apiserver on first need and hands it to every
	// runtime: cheap enough for load tests, but runtimes see each other's objects.
	ModeShared Mode = "shared"
)

// assetsEnv is envtest's variable naming the directory with kube-apiserver and etcd.
const assetsEnv = "KUBEBUILDER_ASSETS"

// Options configures a Simulator. The zero value of each field is a usable default.
type Options struct {
	// Namespace holds the Runtime CRs to serve and receives their kubeconfig
	// Secrets. Default: controlplane.Namespace.
	Namespace string
	// Delay is how long a Runtime stays Pending before it gets its cluster,
	// counted from when the simulator first saw it.
	Delay time.Duration
	// Mode is ModeDedicated (default) or ModeShared.
	Mode Mode
	// BinDir holds the kube-apiserver and etcd binaries. Default: $KUBEBUILDER_ASSETS.
	BinDir string
	// MaxConcurrentStarts bounds clusters starting at once. Default: 2.
	MaxConcurrentStarts int
	// Log receives what the simulator does, with a runtime_id field. Default: discarded.
	Log logrus.FieldLogger
	// RuntimeCRDs are installed into each runtime cluster. nil means
	// RuntimeCRDs() (the BtpOperator CRD); an empty slice installs none.
	RuntimeCRDs []*apiextensionsv1.CustomResourceDefinition
	// Faults, when set, is asked each time a Runtime's creation or changed
	// spec is about to become Ready: a non-nil Fault makes it Failed with a
	// Gardener error instead (ParseFaults builds one from `keb dev
	// --runtime-faults`).
	Faults func(rt *infrastructuremanager.Runtime) *Fault
	// Gardener, when set, is the project whose bindings Runtimes must name and in which their
	// Shoots are created (the scheme must know Gardener's Shoot).
	Gardener *Gardener
}

// Fault is an injected failure of the infrastructure manager: a Gardener
// error (condition Provisioned False, reason GardenerErr, Message) that a
// transient fault recovers from after Duration (default: the simulator's
// delay, at least a second), through Pending to Ready, as the real one
// retries, and a permanent one does not while it lasts (it is asked again at
// each periodic reconciliation).
type Fault struct {
	Message   string
	Permanent bool
	Duration  time.Duration
}

// Simulator plays the infrastructure manager against a control plane. Its
// clusters live as long as its process: after a restart, each Ready runtime
// gets a fresh, empty cluster and a rewritten kubeconfig (objects in the old
// cluster are lost), which keeps kubeconfigs pointing at an apiserver that
// answers, while a Ready runtime is never given a second cluster by one process.
type Simulator struct {
	mgr      manager.Manager
	clusters *clusterPool
	log      logrus.FieldLogger
}

var _ manager.Runnable = (*Simulator)(nil)

// New builds a Simulator serving Runtime CRs through kcp. scheme must know
// Runtime and core types; nil builds one. It starts nothing: call Start.
func New(kcp *rest.Config, scheme *k8sruntime.Scheme, opts Options) (*Simulator, error) {
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	if scheme == nil {
		if scheme, err = newScheme(); err != nil {
			return nil, err
		}
	}
	if !scheme.Recognizes(infrastructuremanager.GroupVersion.WithKind("Runtime")) {
		return nil, errors.New("infrasim: the scheme does not know Runtime: call runtime.AddToScheme on it")
	}
	if !scheme.Recognizes(corev1.SchemeGroupVersion.WithKind("Secret")) {
		return nil, errors.New("infrasim: the scheme does not know core/v1 Secret: add client-go's scheme to it")
	}
	if opts.Gardener != nil && !scheme.Recognizes(core.GroupVersion.WithKind("Shoot")) {
		return nil, errors.New("infrasim: the scheme does not know Gardener's Shoot: call gardener/core.AddToScheme on it")
	}

	skipNameValidation := true
	// client-go's default rate limit (5 requests/s) would make a few hundred
	// runtimes queue behind the simulator's own client, not the API server.
	kcp = rest.CopyConfig(kcp)
	kcp.QPS, kcp.Burst = 500, 1000
	mgr, err := manager.New(kcp, manager.Options{
		Scheme: scheme,
		Logger: logging.Logr(opts.Log),
		// Only Runtime CRs are read (from this cache); Secrets are written blind.
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"}, // keb serves its own metrics
		// Several simulators (tests, keb dev next to keb's own controllers) share
		// one process, and controller names are otherwise process-unique.
		Controller: config.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		return nil, fmt.Errorf("infrasim: building manager: %w", err)
	}
	pool := newClusterPool(opts.Mode, opts.BinDir, opts.RuntimeCRDs, opts.MaxConcurrentStarts, opts.Log)
	r := &reconciler{
		client:   mgr.GetClient(),
		reader:   mgr.GetAPIReader(),
		gardener: opts.Gardener,
		clusters: pool,
		delay:    opts.Delay,
		faults:   opts.Faults,
		log:      opts.Log,
		now:      time.Now,
		state:    map[types.UID]*progress{},
	}
	err = builder.ControllerManagedBy(mgr).
		For(&infrastructuremanager.Runtime{}).
		Named("infrasim").
		// Workers beyond the start slots keep deletions and status writes
		// flowing while clusters start.
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentStarts + 4}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("infrasim: building controller: %w", err)
	}
	return &Simulator{mgr: mgr, clusters: pool, log: opts.Log}, nil
}

// Start serves Runtime CRs until ctx is done, then stops every cluster it
// started. Like a manager.Runnable it blocks; call it once.
func (s *Simulator) Start(ctx context.Context) error {
	s.log.Info("simulated infrastructure manager started")
	runErr := s.mgr.Start(ctx)
	if runErr != nil {
		runErr = fmt.Errorf("infrasim: running: %w", runErr)
	}
	stopErr := s.clusters.stopAll()
	s.log.Info("simulated infrastructure manager stopped")
	return errors.Join(runErr, stopErr)
}

func withDefaults(opts Options) (Options, error) {
	if opts.Namespace == "" {
		opts.Namespace = controlplane.Namespace
	}
	switch opts.Mode {
	case "":
		opts.Mode = ModeDedicated
	case ModeDedicated, ModeShared:
	default:
		return opts, fmt.Errorf("infrasim: unknown mode %q (want %q or %q)", opts.Mode, ModeDedicated, ModeShared)
	}
	if opts.Delay < 0 {
		return opts, fmt.Errorf("infrasim: negative delay %s", opts.Delay)
	}
	switch {
	case opts.MaxConcurrentStarts == 0:
		opts.MaxConcurrentStarts = 2
	case opts.MaxConcurrentStarts < 0:
		return opts, fmt.Errorf("infrasim: negative MaxConcurrentStarts %d", opts.MaxConcurrentStarts)
	}
	if opts.BinDir == "" {
		opts.BinDir = os.Getenv(assetsEnv)
	}
	if opts.BinDir == "" {
		return opts, fmt.Errorf("infrasim: no BinDir and no $%s: the simulator needs kube-apiserver and etcd (run `make k8s-bins`)", assetsEnv)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, bin)); err != nil {
			return opts, fmt.Errorf("infrasim: %s not found in %s (run `make k8s-bins`): %w", bin, opts.BinDir, err)
		}
	}
	if opts.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		opts.Log = l
	}
	if opts.RuntimeCRDs == nil {
		crds, err := RuntimeCRDs()
		if err != nil {
			return opts, fmt.Errorf("infrasim: %w", err)
		}
		opts.RuntimeCRDs = crds
	}
	return opts, nil
}

func newScheme() (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("infrasim: building scheme: %w", err)
	}
	if err := infrastructuremanager.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("infrasim: building scheme: %w", err)
	}
	if err := core.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("infrasim: building scheme: %w", err)
	}
	return s, nil
}
