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

// newBindings builds the binding service when keb has a control plane to
// find runtimes' kubeconfigs in; without one (nil, nil) bindings are not
// offered. Binds run on the request path, so every replica builds it,
// workers or not.
func newBindings(cfg config.Config, store *storage.Store, cat *catalog.Catalog, work *metrics.Work, log logrus.FieldLogger) (*binding.Service, error) {
	if cfg.Engine.KCPKubeconfig == "" && !InCluster() {
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
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	kcpCfg, err := LoadKubeconfig(cfg.Engine.KCPKubeconfig)
	if err != nil {
		return nil, err
	}
	kcpCfg.WrapTransport = work.CountRequests("control_plane")
	kcp, err := client.New(kcpCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("control-plane client for bindings: %w", err)
	}
	runtimes := runtimeclient.NewCache(kcp, controlplane.Namespace, scheme, runtimeclient.Bounds{})
	runtimes.WrapTransport = work.CountRequests("runtime")
	return binding.New(store, runtimes, binding.Config{
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
