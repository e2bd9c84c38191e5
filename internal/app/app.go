// Package app wires keb's parts together from a config.Config: the database,
// the catalog, the broker, auth and the HTTP router. `keb serve`, `keb dev`
// and the HTTP tests all build their server here, so they run the same code.
package app

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"
	"golang.org/x/net/netutil"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/broker"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/cis"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/console"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/events"
	"github.com/kyma-keb/keb/internal/expiry"
	"github.com/kyma-keb/keb/internal/guardrails"
	"github.com/kyma-keb/keb/internal/httpapi"
	"github.com/kyma-keb/keb/internal/metrics"
	"github.com/kyma-keb/keb/internal/orchestration"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimelisting"
	"github.com/kyma-keb/keb/internal/seeds"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/internal/userkubeconfig"
)

// DevOptions are what `keb dev` adds to a server: its own signing key is
// trusted and its token endpoint is served. Production never sets them.
type DevOptions struct {
	PublicKeys []crypto.PublicKey
	TokenIssue http.Handler
	// Mounts are dev-only stand-ins served on the broker's port, by path
	// prefix (e.g. /dev/cis/), through the router (its limits and logs).
	Mounts map[string]http.Handler
}

// App is a built keb server.
type App struct {
	Handler http.Handler
	// Metrics serves /metrics when APP_METRICS_ADDRESS gives it a listener
	// of its own; nil when /metrics is on Handler.
	Metrics http.Handler
	cfg     config.Config
	pool    *pgxpool.Pool
	log     logrus.FieldLogger
	engine  *engine
	// readiness is /readyz's; Serve makes it fail when shutdown begins.
	readiness *httpapi.Readiness
	// stopReadiness stops the background readiness checks and waits for
	// them.
	stopReadiness func()
	// bindings is nil without a control plane.
	bindings *binding.Service
}

// New builds the server described by cfg. ctx bounds background work (JWKS
// refreshes) for the App's lifetime.
func New(ctx context.Context, cfg config.Config, log logrus.FieldLogger, dev *DevOptions) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cipher, err := storage.NewCipher(cfg.DatabaseSecretKey, cfg.DatabaseSecretKeysPrior...)
	if err != nil {
		return nil, err
	}
	loadOpts := []catalog.LoadOption{catalog.DefaultOIDCFile(cfg.OIDCDefaultFile), catalog.DualStackDocsURL(cfg.DualStackDocsURL)}
	if !cfg.RejectUnsupportedParameters {
		loadOpts = append(loadOpts, catalog.IgnoreUnsupportedParameters())
	}
	if cfg.GVisorEnabled {
		loadOpts = append(loadOpts, catalog.OfferGVisor())
	}
	if cfg.UseSmallerMachineTypes {
		loadOpts = append(loadOpts, catalog.SmallerMachineTypes())
	}
	cat, err := catalog.Load(cfg.PlansFile, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("loading plans: %w", err)
	}
	// Validated at start-up, every error listed, as upstream does: a broker with a bad rule set
	// would fail provisionings one by one instead.
	rules, err := loadRules(cfg, cat)
	if err != nil {
		return nil, err
	}
	authCfg := auth.Config{
		JWKSURLs:            cfg.JWKSURLs,
		PublicKeyFiles:      cfg.PublicKeyFiles,
		Issuer:              cfg.Issuer,
		Audience:            cfg.Audience,
		TrustGateway:        cfg.TrustGateway,
		JWKSRefreshInterval: cfg.JWKSRefresh,
	}
	if dev != nil {
		authCfg.PublicKeys = dev.PublicKeys
	}
	verifier, err := auth.NewVerifier(ctx, authCfg, log)
	if err != nil {
		return nil, fmt.Errorf("setting up token verification: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	work := metrics.NewWork(reg)
	pool, err := storage.Open(ctx, cfg.DatabaseURL, cfg.PoolSize(), work.StatementTracer())
	if err != nil {
		return nil, err
	}
	if cfg.MigrateOnStart {
		applied, err := storage.MigrateUp(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, err
		}
		if len(applied) > 0 {
			log.WithField("versions", applied).Info("applied database migrations")
		}
	}
	// One queue client writes queue entries in the transaction that accepts
	// an operation and, with workers, works them once the engine is built.
	queue, err := process.NewQueue(pool, queueConfig(cfg), log)
	if err != nil {
		pool.Close()
		return nil, err
	}
	store := storage.NewStore(pool, cipher, queue)
	orchestrations := storage.NewOrchestrations(pool, queue)
	opsMetrics := metrics.NewOperations(reg, auth.RejectionReasons)
	verifier.OnReject(opsMetrics.TokenRejected)
	expirer := expiry.New(store, expiry.Lifetimes(cat.Plans(), cfg.TrialDuration, cfg.FreeDuration), cfg.OperationTimeout,
		log.WithField("component", "expiry"))
	cp, err := newControlPlane(cfg, work)
	if err != nil {
		pool.Close()
		return nil, err
	}
	bindings, err := newBindings(cfg, cp, store, cat, log)
	if err != nil {
		pool.Close()
		return nil, err
	}
	var eng *engine
	if cfg.Engine.Workers > 0 {
		if eng, err = newEngine(cfg, queue, store, orchestrations, cat, rules, expirer, bindings, work, opsMetrics, metrics.NewIntegrations(reg), log); err != nil {
			pool.Close()
			return nil, err
		}
	}
	kubeconfigs := userkubeconfig.New(store, nil, nil, controlplane.Namespace)
	if cp != nil {
		kubeconfigs = userkubeconfig.New(store, cp.kcp, cp.runtimes, controlplane.Namespace)
	}
	brokerOpts := broker.Options{
		UnsupportedParameters: metrics.NewUnsupportedParameters(reg),
		GVisorGlobalAccounts:  cfg.GVisorAllowedGlobalAccounts,
		DefaultRequestRegion:  cfg.DefaultRequestRegion,
		EnabledPlans:          cfg.EnabledPlans,
		OperationTimeout:      cfg.OperationTimeout,
		RetryAfter:            cfg.RetryAfter,
		BindablePlans:         cfg.Binding.BindablePlans,
		AllowedGlobalAccounts: guardrails.AllowedGlobalAccounts{Restrict: cfg.RestrictToAllowedGlobalAccounts,
			Accounts: cfg.AllowedGlobalAccounts},
		SubaccountMovement: cfg.SubaccountMovement,
		Labels: broker.LabelOptions{BrokerURL: cfg.BrokerURL, Lifetimes: expiry.Lifetimes(cat.Plans(), cfg.TrialDuration, cfg.FreeDuration),
			TrialDocs: cfg.TrialDocsURL, FreeDocsURL: cfg.FreeDocsURL},
	}
	if cp != nil {
		brokerOpts.Labels.Servers = kubeconfigs
		brokerOpts.Seeds = &seeds.Cache{Reader: cp.kcp, Namespace: controlplane.Namespace, Name: cfg.SeedsConfigMap}
	}
	if cfg.QuotaCheck {
		id, secret, err := cfg.Cleanup.Credentials()
		if err != nil {
			pool.Close()
			return nil, err
		}
		ent, err := cis.NewEntitlements(cis.EntitlementsConfig{BaseURL: cfg.CISEntitlementsURL, AuthURL: cfg.Cleanup.CISAuthURL,
			ClientID: id, ClientSecret: secret, Timeout: cisTimeout})
		if err != nil {
			pool.Close()
			return nil, err
		}
		brokerOpts.Quota = &guardrails.Quota{Entitlements: ent, Instances: store, SkipPlans: onePerGlobalAccountPlans(cat)}
	}
	if cfg.BlocklistFile != "" {
		// A blocklist that does not parse stops the start: it would not
		// block what its author meant.
		bl, err := guardrails.LoadFile(cfg.BlocklistFile, log.WithField("component", "blocklist"))
		if err != nil {
			pool.Close()
			return nil, err
		}
		brokerOpts.Blocklist = bl
		go bl.Watch(ctx, cfg.BlocklistReload) // ctx bounds the App's background work
	}
	if bindings != nil {
		brokerOpts.Bindings = bindings // a nil *Service must not become a non-nil interface
	}
	brk, err := broker.New(cat, store, brokerOpts, log)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("building broker: %w", err)
	}
	var accounts metrics.AccountCensus
	if eng != nil {
		accounts = eng.accounts
		reg.MustRegister(eng.scheduler.Collectors()...)
	}
	reg.MustRegister(metrics.NewCensus(store, accounts, cfg.MetricsCensusInterval, log.WithField("component", "metrics")))
	a := &App{cfg: cfg, pool: pool, log: log, engine: eng, bindings: bindings}
	readiness := httpapi.NewReadiness(cfg.ReadinessInterval, httpapi.CheckTimeout, log.WithField("component", "readiness"), a.probes()...)
	var runtimeCRs runtimelisting.RuntimeCRs // nil interface without a control plane
	if cp != nil {
		runtimeCRs = runtimelisting.ControlPlaneCRs{KCP: cp.kcp, Namespace: controlplane.Namespace}
	}
	runtimesHandler := runtimelisting.NewHandler(store, catalog.ServiceID, runtimeCRs)
	eventList := events.New(store, cfg.EventsRetention)
	opts := httpapi.Options{Broker: brk, Auth: verifier, Log: log, Registry: reg, Ready: readiness,
		RequestTimeout: cfg.RequestTimeout,
		Runtimes:       runtimesHandler, Expire: expiry.Handler(expirer, log)}
	oc := cfg.Engine.Orchestration
	opts.KubeconfigOrigins = cfg.KubeconfigAllowOrigins
	opts.Events = events.Handler(eventList, log.WithField("component", "events"))
	opts.Kubeconfig = userkubeconfig.Handler(kubeconfigs, log.WithField("component", "kubeconfig"))
	orchestrationAPI := orchestration.NewHandler(orchestrations, orchestration.Defaults{KymaVersion: cfg.Engine.KymaVersion,
		KubernetesVersion: oc.KubernetesVersion, MachineImage: oc.MachineImage, MachineImageVersion: oc.MachineImageVersion},
		log.WithField("component", "orchestration"))
	opts.Orchestrations = orchestrationAPI
	consoleOpts := console.Options{Runtimes: runtimesHandler, Events: eventList, Instances: store, Verifier: verifier,
		Overview: store, Orchestrations: orchestrationAPI, Progress: orchestrations, EventsAPI: opts.Events, AccountUsage: store,
		DevLogin: dev != nil, Log: log.WithField("component", "console")}
	if eng != nil {
		consoleOpts.Pool = eng.accounts // a nil *AccountPool must not become a non-nil interface
		consoleOpts.Steps = eng.steps
	}
	opts.Console = console.New(consoleOpts)
	if dev != nil {
		opts.DevToken, opts.Mounts = dev.TokenIssue, dev.Mounts
	}
	opts.MaxBodyBytes, opts.FormReadTimeout = int64(cfg.HTTP.MaxBodyBytes), cfg.HTTP.FormReadTimeout
	if cfg.HTTP.MetricsAddress != "" {
		opts.MetricsElsewhere = true
		a.Metrics = httpapi.MetricsHandler(reg)
	}
	if a.Handler, err = httpapi.NewRouter(opts); err != nil {
		pool.Close()
		return nil, fmt.Errorf("building the HTTP router: %w", err)
	}
	// The checks outlive ctx (cancelled when shutdown begins): /readyz
	// reports on the replica while it drains, until Close.
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var checking sync.WaitGroup
	checking.Go(func() { readiness.Run(rctx) })
	a.readiness = readiness
	a.stopReadiness = func() { stop(); checking.Wait() }
	return a, nil
}

// NewServer is the HTTP server keb answers with, bounded so that slow or
// numerous clients cannot starve it: a request must arrive whole within the
// read timeout.
func (a *App) NewServer() *http.Server {
	return &http.Server{
		Handler:           a.Handler,
		ReadHeaderTimeout: min(10*time.Second, a.cfg.HTTP.ReadTimeout),
		ReadTimeout:       a.cfg.HTTP.ReadTimeout,
		IdleTimeout:       a.cfg.HTTP.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// Listener caps ln at the configured number of concurrent connections;
// further clients wait in the kernel's backlog instead of exhausting file
// descriptors.
func (a *App) Listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, a.cfg.HTTP.MaxConnections)
}

// Serve answers HTTP on ln until ctx is done, then drains requests for up to
// the configured shutdown timeout. With APP_METRICS_ADDRESS set, /metrics is
// served on a listener of its own.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv := a.NewServer()
	errc := make(chan error, 3)
	go func() { errc <- srv.Serve(a.Listener(ln)) }()
	if a.Metrics != nil {
		mln, err := net.Listen("tcp", a.cfg.HTTP.MetricsAddress)
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("listening for metrics on %s: %w", a.cfg.HTTP.MetricsAddress, err)
		}
		msrv := &http.Server{Handler: a.Metrics, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
		go func() {
			if err := msrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				a.log.WithError(err).Error("serving metrics stopped")
			}
		}()
		defer msrv.Close()
		a.log.WithField("address", mln.Addr().String()).Info("serving /metrics on its own listener")
	}
	if a.cfg.PprofAddr != "" {
		if err := a.servePprof(ctx, a.cfg.PprofAddr); err != nil {
			_ = srv.Close()
			return err
		}
	}
	var background sync.WaitGroup
	defer background.Wait() // deferred first, so it runs after stopBackground
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	if a.engine != nil {
		// The queue's context only carries values: shutting it down is
		// Stop's job below, which lets running steps finish.
		if err := a.engine.queue.Start(ctx); err != nil {
			_ = srv.Close()
			return err
		}
		background.Go(func() { a.engine.watcher.Run(bg) })
		background.Go(func() { a.engine.kymaStates.Run(bg) })
		for _, w := range a.engine.watched {
			background.Go(func() {
				if err := w.Start(bg); err != nil {
					a.log.WithError(err).Warn("control-plane configuration is read from the API server: its watch stopped")
				}
			})
		}
		background.Go(func() { a.engine.takeover.Run(bg) })
	}
	select {
	case err := <-errc:
		if a.engine != nil {
			a.stopWorkers()
		}
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	// Load balancers see /readyz fail and stop sending; requests that
	// still arrive meanwhile are answered as usual.
	a.readiness.Drain()
	if a.cfg.ShutdownDelay > 0 {
		a.log.WithField("delay", a.cfg.ShutdownDelay.String()).Info("shutting down: /readyz fails; still serving until load balancers stop sending")
		time.Sleep(a.cfg.ShutdownDelay)
	}
	a.log.Info("shutting down: draining requests and letting running steps finish")
	// Requests drain and steps finish side by side, both within the
	// shutdown timeout.
	if a.engine != nil {
		background.Go(a.stopWorkers)
	}
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("draining requests: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// stopWorkers stops taking work and gives running steps the shutdown
// timeout to reach their next checkpoint; steps still running then are
// cancelled (their bookkeeping saves what they did) and another replica
// redoes the rest.
func (a *App) stopWorkers() {
	a.engine.stopping.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := a.engine.queue.Stop(sctx); err != nil {
		a.log.WithError(err).Warn("stopping workers")
		return
	}
	a.log.Info("workers stopped; every running step finished")
}

// Close stops the readiness checks, waits for asynchronous binds and
// releases the database pool.
func (a *App) Close() {
	a.stopReadiness()
	if a.bindings != nil {
		a.bindings.Close()
	}
	a.pool.Close()
}
