// Package lmsim is keb's Lifecycle Manager stand-in: it watches Kyma CRs in
// the control plane and, as Lifecycle Manager does, installs their modules
// into the runtimes (the btp-operator module for real: the BtpOperator CRD,
// its default CR and BTP Manager's rules on it; every other module by
// reporting it installed) and reports the Kyma CR's status: Processing, then
// Ready, or Error for a module or channel its catalog does not have, and for
// a Kyma CR without the skr-domain annotation (its watcher needs it). It
// finds a runtime's kubeconfig as Lifecycle Manager does, by the Secret's
// operator.kyma-project.io/kyma-name label. `keb dev` and the tests run it
// in-process, next to infrasim.
package lmsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/logging"
)

// Options configures a Simulator. The zero value of each field is a usable default.
type Options struct {
	// Namespace holds the Kyma CRs and the runtimes' kubeconfig Secrets.
	// Default: controlplane.Namespace.
	Namespace string
	// Catalog is the modules Lifecycle Manager offers, by name, with the
	// channels each is released in. nil: DefaultCatalog.
	Catalog map[string][]string
	// Delay is how long a module takes to install, counted from when the
	// stand-in first saw it in a Kyma CR.
	Delay time.Duration
	// NoWatcher turns Lifecycle Manager's watcher off: Kyma CRs without the
	// skr-domain annotation are then accepted.
	NoWatcher bool
	// Resync is how soon a Kyma CR is reconciled again after a change
	// (Lifecycle Manager requeues, and learns of its modules' CRs from its
	// watcher); while nothing changes the interval doubles, up to 64 ×
	// Resync, which is also a Ready CR's. Default: one second.
	Resync time.Duration
	// Log receives what the stand-in does. Default: discarded.
	Log logrus.FieldLogger
}

// DefaultCatalog is the modules the stand-in offers: those resources/modules.yaml installs by
// default and a few more users ask for, each in the regular and fast channels.
var DefaultCatalog = map[string][]string{
	kyma.ModuleBTPOperator: {controlplane.ChannelRegular, controlplane.ChannelFast},
	"istio":                {controlplane.ChannelRegular, controlplane.ChannelFast},
	"api-gateway":          {controlplane.ChannelRegular, controlplane.ChannelFast},
	"keda":                 {controlplane.ChannelRegular, controlplane.ChannelFast},
	"serverless":           {controlplane.ChannelRegular, controlplane.ChannelFast},
	"telemetry":            {controlplane.ChannelRegular, controlplane.ChannelFast},
	"eventing":             {controlplane.ChannelRegular, controlplane.ChannelFast},
	"nats":                 {controlplane.ChannelRegular, controlplane.ChannelFast},
	"connectivity-proxy":   {controlplane.ChannelRegular},
}

// Simulator plays Lifecycle Manager against a control plane.
type Simulator struct {
	mgr      manager.Manager
	runtimes *runtimeClients
	log      logrus.FieldLogger
}

var _ manager.Runnable = (*Simulator)(nil)

// New builds a Simulator serving the Kyma CRs of kcp. scheme must know Kyma
// and core types. It starts nothing: call Start.
func New(kcp *rest.Config, scheme *k8sruntime.Scheme, opts Options) (*Simulator, error) {
	opts = withDefaults(opts)
	if !scheme.Recognizes(kyma.GroupVersion.WithKind(kyma.Kind)) {
		return nil, errors.New("lmsim: the scheme does not know Kyma: call kyma.AddToScheme on it")
	}
	// Only the runtimes' kubeconfig Secrets are watched: Lifecycle Manager
	// finds them by this label.
	hasKymaName, err := labels.NewRequirement(controlplane.LabelKymaName, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("lmsim: %w", err)
	}
	skip := true
	kcp = rest.CopyConfig(kcp)
	kcp.QPS, kcp.Burst = 500, 1000
	mgr, err := manager.New(kcp, manager.Options{
		Scheme: scheme,
		Logger: logging.Logr(opts.Log),
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}},
			ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: labels.NewSelector().Add(*hasKymaName)}},
		},
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return nil, fmt.Errorf("lmsim: building manager: %w", err)
	}
	runtimes := newRuntimeClients()
	r := &reconciler{client: mgr.GetClient(), runtimes: runtimes, opts: opts, log: opts.Log,
		now: time.Now, firstSeen: map[string]time.Time{}, unchanged: map[string]int{}}
	err = builder.ControllerManagedBy(mgr).
		For(&kyma.Kyma{}).
		// A runtime's kubeconfig arriving (or changing) is when its modules
		// can be installed.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name := o.GetLabels()[controlplane.LabelKymaName]
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Named("lmsim").
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("lmsim: building controller: %w", err)
	}
	return &Simulator{mgr: mgr, runtimes: runtimes, log: opts.Log}, nil
}

// Start serves Kyma CRs until ctx is done. Like a manager.Runnable it blocks; call it once.
func (s *Simulator) Start(ctx context.Context) error {
	s.log.Info("Lifecycle Manager stand-in started")
	defer s.log.Info("Lifecycle Manager stand-in stopped")
	if err := s.mgr.Start(ctx); err != nil {
		return fmt.Errorf("lmsim: running: %w", err)
	}
	return nil
}

func withDefaults(opts Options) Options {
	if opts.Namespace == "" {
		opts.Namespace = controlplane.Namespace
	}
	if opts.Catalog == nil {
		opts.Catalog = DefaultCatalog
	}
	if opts.Resync <= 0 {
		opts.Resync = time.Second
	}
	if opts.Log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		opts.Log = l
	}
	return opts
}
