package app

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/metrics"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
)

// controlPlane is what the request path reads of the control plane:
// Runtime CRs and runtimes' kubeconfig Secrets (binds, people's kubeconfigs,
// instance labels).
type controlPlane struct {
	kcp      client.Client
	runtimes *runtimeclient.Cache
}

// newControlPlane connects to the control plane when keb has one; nil
// without (bindings, kubeconfigs and API server labels are then not offered).
// Every replica builds it, workers or not.
func newControlPlane(cfg config.Config, work *metrics.Work) (*controlPlane, error) {
	if cfg.Engine.KCPKubeconfig == "" && !InCluster() {
		return nil, nil
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	kcpCfg, err := LoadKubeconfig(cfg.Engine.KCPKubeconfig)
	if err != nil {
		return nil, err
	}
	kcpCfg.WrapTransport = work.CountRequests("control_plane")
	// client-go's default (5 requests per second) made every GET instance
	// wait 200 ms for its labels' Secret read under a steady stream of
	// requests (measured on keb dev); each read is one GET, bounded by
	// APP_REQUEST_TIMEOUT.
	kcpCfg.QPS, kcpCfg.Burst = 200, 400
	kcp, err := client.New(kcpCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("control-plane client for the request path: %w", err)
	}
	runtimes := runtimeclient.NewCache(kcp, controlplane.Namespace, scheme, runtimeclient.Bounds{})
	runtimes.WrapTransport = work.CountRequests("runtime")
	return &controlPlane{kcp: kcp, runtimes: runtimes}, nil
}

// newBindings builds the binding service on the control plane; without one
// (nil, nil) bindings are not offered.
func newBindings(cfg config.Config, cp *controlPlane, store *storage.Store, cat *catalog.Catalog, log logrus.FieldLogger) (*binding.Service, error) {
	if cp == nil {
		return nil, nil
	}
	k := cfg.Binding
	var planIDs []string
	for _, name := range k.BindablePlans {
		p, ok := cat.PlanByName(name)
		if !ok {
			return nil, fmt.Errorf("APP_BROKER_BINDING_BINDABLE_PLANS: unknown plan %q", name)
		}
		planIDs = append(planIDs, p.ID)
	}
	return binding.New(store, cp.runtimes, binding.Config{
		BindablePlanIDs: planIDs, MaxPerInstance: k.MaxPerInstance, DefaultExpiration: k.DefaultExpiration,
		MinExpiration: k.MinExpiration, MaxExpiration: k.MaxExpiration, Role: k.Role, Timeout: k.Timeout,
		AsyncTimeout: k.AsyncTimeout,
	}, log.WithField("component", "binding")), nil
}

// pruneBindings is the periodic job removing expired bindings.
func pruneBindings(cfg config.Config, bindings *binding.Service) process.Periodic {
	return process.Periodic{Name: binding.PruneJob, Interval: cfg.Binding.PruneInterval, Run: func(ctx context.Context) error {
		_, err := bindings.Prune(ctx)
		return err
	}}
}
