package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/director"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/expiry"
	gardenerpkg "github.com/kyma-keb/keb/internal/gardener"
	gardenercore "github.com/kyma-keb/keb/internal/gardener/core"
	gardenersecurity "github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kube"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/metrics"
	"github.com/kyma-keb/keb/internal/orchestration"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/process/upgrade"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
)

// Scheme knows every kind keb reads or writes: core kinds plus the Runtime,
// Kyma and BtpOperator CRs.
func Scheme() (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{
		clientgoscheme.AddToScheme, infrastructuremanager.AddToScheme, kyma.AddToScheme, btpmanager.AddToScheme,
		gardenercore.AddToScheme, gardenersecurity.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// InCluster reports whether keb runs in a Kubernetes pod, where an empty
// APP_KCP_KUBECONFIG means the pod's own service account (the Helm chart's
// default: the control plane is the cluster keb runs in).
func InCluster() bool { return os.Getenv("KUBERNETES_SERVICE_HOST") != "" }

// LoadKubeconfig reads a kubeconfig file into a rest.Config; an empty path
// in a pod is the pod's service account.
func LoadKubeconfig(path string) (*rest.Config, error) {
	if path == "" && InCluster() {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the in-cluster service account config: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// accountPoll is how often a provisioning waiting for a free hyperscaler account looks again.
// Not a setting: accounts are added by operators, rarely, and APP_PROVISIONING_ACCOUNT_TIMEOUT
// bounds the wait.
const accountPoll = time.Minute

// engine is the running part of keb that drives operations.
type engine struct {
	queue   *process.Queue
	watcher *process.Watcher
	// kymaStates writes what the watcher sees of Kyma CRs to the database.
	kymaStates *process.KymaStates
	takeover   *process.Takeover
	// watched serve what every provisioning reads of the control plane's
	// configuration (override sources, Kyma version pins) from watches.
	watched []*kube.Watched
	// kcp and namespace are read by the readiness checks.
	kcp       client.Reader
	namespace string
	workers   int
	// stopping is set once shutdown began: the workers take no new work.
	stopping atomic.Bool
	log      logrus.FieldLogger
	// accounts is the hyperscaler account pool, counted for metrics.
	accounts *hyperscaler.AccountPool
	// steps are each operation type's step names in pipeline order, for
	// the console's timeline (the steps still to come).
	steps map[string][]string
	// scheduler runs orchestrations; its metrics join the registry.
	scheduler *orchestration.Scheduler
}

// queueConfig is the work queue of a replica with cfg.
func queueConfig(cfg config.Config) process.QueueConfig {
	ec := cfg.Engine
	return process.QueueConfig{Workers: ec.Workers, JobTimeout: ec.JobTimeout, RescueAfter: ec.RescueAfter,
		PollInterval: wokenJobPoll}
}

// newEngine builds the pipelines, hands them to queue's workers, and builds
// the control-plane watch.
func newEngine(cfg config.Config, queue *process.Queue, store *storage.Store, orchestrations *storage.Orchestrations,
	cat *catalog.Catalog, rules *hyperscaler.Rules, expirer *expiry.Expirer,
	bindings *binding.Service, work *metrics.Work, observer *metrics.Operations, integrations *metrics.Integrations,
	log logrus.FieldLogger) (*engine, error) {
	ec := cfg.Engine
	if ec.KCPKubeconfig == "" && !InCluster() {
		return nil, errors.New("no control plane: set APP_KCP_KUBECONFIG (or KUBECONFIG), or APP_WORKERS=0 to only accept requests")
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	kcpCfg, err := LoadKubeconfig(ec.KCPKubeconfig)
	if err != nil {
		return nil, err
	}
	// client-go's default rate limit (a few requests per second) would make
	// the workers queue behind their own client, not the API server.
	kcpCfg.QPS, kcpCfg.Burst = float32(10*ec.Workers+50), 20*ec.Workers+100
	kcpCfg.WrapTransport = work.CountRequests("control_plane")
	// keb runs next to its control plane: gzip on its watch streams and
	// responses cost CPU on both ends (the API server compresses, keb
	// inflates every watch event) and save bandwidth that is not short.
	kcpCfg.DisableCompression = true
	kcp, err := client.New(kcpCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("control-plane client: %w", err)
	}
	// The account pool is read straight from the API server: a cached read
	// could hand one account to two tenants.
	gardener := kcp
	if ec.GardenerKubecfg != "" && ec.GardenerKubecfg != ec.KCPKubeconfig {
		gcfg, err := LoadKubeconfig(ec.GardenerKubecfg)
		if err != nil {
			return nil, err
		}
		gcfg.QPS, gcfg.Burst = kcpCfg.QPS, kcpCfg.Burst
		gcfg.WrapTransport = kcpCfg.WrapTransport
		if gardener, err = client.New(gcfg, client.Options{Scheme: scheme}); err != nil {
			return nil, fmt.Errorf("account pool client: %w", err)
		}
	}
	// The control plane's namespace is fixed: the infrastructure manager and Lifecycle Manager
	// look for keb's CRs there, and the runtime client cache reads kubeconfigs from it.
	ns := controlplane.Namespace
	poolKind, err := hyperscaler.ParseKind(ec.HAP.PoolKind)
	if err != nil {
		return nil, fmt.Errorf("APP_HAP_POOL_KIND: %w", err)
	}
	accounts := hyperscaler.NewAccountPool(gardener, poolKind, gardenerpkg.ProjectNamespace(ec.GardenerProject), store.AccountUsage)
	windows, err := maintenance.ParseConfig(ec.Orchestration.MaintenanceWindows)
	if err != nil {
		return nil, err
	}
	kymaSettings, err := kymaSettings(ec, cat)
	if err != nil {
		return nil, err
	}
	provCfg := provisioning.Config{
		Kyma: kymaSettings, AwaitKymaReady: ec.AwaitKymaReady, KymaTimeout: ec.KymaTimeout,
		MaintenanceWindows: windows,
		DefaultKymaVersion: ec.KymaVersion, OnDemandVersion: ec.OnDemandVersion, Namespace: ns,
		AccountTimeout: ec.AccountTimeout, RuntimeTimeout: ec.RuntimeTimeout,
		BTPManagerTimeout: ec.BTPMgrTimeout, AccountPoll: accountPoll, RuntimePoll: ec.RuntimePoll,
		BTPManagerPoll: ec.BTPMgrPoll,
		HAP: provisioning.HAP{Rules: rules, MultiAccountGlobalAccounts: ec.HAP.MultiAccountGlobalAccounts,
			Limit: ec.HAP.MultiAccountLimits.For},
		Runtime: provisioning.RuntimeSettings{KubernetesVersion: ec.Runtime.KubernetesVersion, MachineImage: ec.Runtime.MachineImage,
			MachineImageVersion: ec.Runtime.MachineImageVersion, ControlPlaneFailureTolerance: ec.Runtime.ControlPlaneFailureTolerance,
			MaxPods: ec.Runtime.MaxPods, MaxPodsGlobalAccounts: ec.Runtime.MaxPodsGlobalAccounts},
		AVS: cfg.AVS, EDP: cfg.EDP, IAS: cfg.IAS, LMS: cfg.LMS,
	}
	// The optional integrations: a client only where configured, so that
	// their steps join the pipelines only then.
	var avsClient *avs.Client
	if cfg.AVS.Configured() {
		avsClient = avs.NewClient(cfg.AVS, nil, integrations)
	}
	var edpClient *edp.Client
	if cfg.EDP.Enabled() {
		edpClient = edp.NewClient(cfg.EDP, nil, integrations)
	}
	// One runtime client cache for every pipeline: a runtime's client (and
	// its connections) is built once, whichever operation reaches it.
	sources, err := overrides.NewSources(kcpCfg, scheme, ns, kcp)
	if err != nil {
		return nil, err
	}
	pins, err := kyma.NewVersionPins(kcpCfg, scheme, kcp)
	if err != nil {
		return nil, err
	}
	runtimes := runtimeclient.NewCache(kcp, ns, scheme, runtimeclient.Bounds{})
	runtimes.WrapTransport = work.CountRequests("runtime")
	deprov := deprovisioning.Deps{
		Config: deprovisioning.Config{Namespace: ns, RemovalTimeout: ec.RemovalTimeout, RemovalPoll: ec.RemovalPoll,
			SkipAfter: ec.RemovalSkipAfter, FinalizerGrace: ec.FinalizerGrace,
			SharedPlanIDs: sharedPlanIDs(cat), ShootWait: ec.HAP.ReleaseShootTimeout},
		Store: store, KCP: kcp, Accounts: accounts, Runtimes: runtimes, RuntimeClients: runtimes,
	}
	if bindings != nil {
		deprov.Bindings = bindings
	}
	if avsClient != nil {
		deprov.AVS = avsClient
	}
	if edpClient != nil {
		deprov.EDP, deprov.Subaccounts = edpClient, store
	}
	var iasClient *ias.Client
	if cfg.IAS.Enabled() {
		// Only then: a nil *ias.Client in the interfaces would add the steps.
		iasClient = ias.NewClient(cfg.IAS, nil, integrations)
		deprov.IAS = iasClient
	}
	watcher := process.NewWatcher(kcpCfg, scheme, ns, store, queue, log.WithField("component", "watch"))
	watcher.MaxRun = ec.JobTimeout
	kymaStates := process.NewKymaStates(store, log.WithField("component", "kyma_states"))
	watcher.Kyma, watcher.WakeOnKyma = kymaStates, ec.AwaitKymaReady
	prov := provisioning.Deps{
		Config: provCfg, Catalog: cat, Store: store, Finisher: store, KCP: kcp, Accounts: accounts, AccountStore: store,
		Runtimes: runtimes, OverrideSources: sources, VersionPins: pins, Watch: watcher, AVS: avsClient, EDP: edpClient,
	}
	if iasClient != nil {
		prov.IAS = iasClient
	}
	if cfg.LMS.Enabled() {
		prov.LMS, prov.LMSTenants = lms.NewClient(cfg.LMS, nil, integrations), store
	}
	if cfg.Director.Configured() {
		prov.Director = director.NewClient(cfg.Director, nil, integrations)
	}
	pipelines := map[storage.OperationType]process.Pipeline{
		storage.OperationTypeProvision:   provisioning.Pipeline(prov),
		storage.OperationTypeDeprovision: deprovisioning.Pipeline(deprov),
	}
	upd := update.Deps{
		Config: update.Config{Namespace: ns, BTPManagerTimeout: ec.BTPMgrTimeout, BTPManagerPoll: ec.BTPMgrPoll,
			RuntimeTimeout: ec.RuntimeTimeout, RuntimePoll: ec.RuntimePoll, RuntimeGrace: ec.RuntimeGrace,
			AccountTimeout: ec.AccountTimeout, AccountPoll: accountPoll, Kyma: kymaSettings, HAP: provCfg.HAP,
			Runtime: provCfg.Runtime},
		Catalog: cat, KCP: kcp, Accounts: accounts, AccountStore: store, Store: store, Runtimes: runtimes, Watch: watcher,
	}
	if edpClient != nil {
		// Only then: a nil *edp.Client in the interface would add the step.
		upd.EDP, upd.EDPRequired = edpClient, cfg.EDP.Required
	}
	pipelines[storage.OperationTypeUpdate] = update.Pipeline(upd)
	upgrades := upgrade.Deps{Config: upgrade.Config{Namespace: ns, RuntimeTimeout: ec.RuntimeTimeout, RuntimePoll: ec.RuntimePoll,
		RuntimeGrace: ec.RuntimeGrace},
		Catalog: cat, KCP: kcp, Store: store, Watch: watcher}
	if avsClient != nil && cfg.AVS.Maintains() {
		exempt, err := avs.ReadMaintenanceExemptions(cfg.AVS.MaintenanceExemptionsFile)
		if err != nil {
			return nil, err
		}
		upgrades.AVS, upgrades.Provisioning, upgrades.AVSExemptions = avsClient, store, exempt
	}
	pipelines[storage.OperationTypeUpgradeKyma] = upgrade.KymaPipeline(upgrades)
	pipelines[storage.OperationTypeUpgradeCluster] = upgrade.ClusterPipeline(upgrades)
	scheduler := orchestration.NewScheduler(orchestrations, windows, log.WithField("component", "orchestration"))
	scheduler.Poll, scheduler.OperationTimeout = ec.Orchestration.Poll, ec.Orchestration.UpgradeTimeout
	eng := process.NewEngine(store, pipelines, log.WithField("component", "engine"))
	steps := map[string][]string{}
	for t, p := range pipelines {
		for _, st := range p.Steps {
			steps[string(t)] = append(steps[string(t)], st.Name())
		}
	}
	eng.Slice = ec.JobTimeout / 3
	eng.Observer = orchestration.Observer{Observer: observer, Orchestrations: orchestrations}
	periodic := []process.Periodic{{Name: "expire_trials", Interval: ec.ExpiryInterval, Run: func(ctx context.Context) error {
		_, err := expirer.ExpireDue(ctx)
		return err
	}}}
	cleanups, err := cleanupJobs(cfg, store, kcp, observer, log)
	if err != nil {
		return nil, err
	}
	if bindings != nil {
		periodic = append(periodic, pruneBindings(cfg, bindings))
	}
	// The step history of operations past the events' retention: what
	// GET /events no longer shows is not kept either.
	periodic = append(periodic, process.Periodic{Name: "prune_events", Interval: time.Hour, Run: func(ctx context.Context) error {
		_, err := store.PruneEventHistory(ctx, time.Now().Add(-cfg.EventsRetention), 1000)
		return err
	}})
	// The listing's and the census's counts, kept as deltas by the writes'
	// triggers, folded so that summing them stays cheap.
	periodic = append(periodic, process.Periodic{Name: storage.RuntimeCountsFoldJob, Interval: storage.RuntimeCountsFoldInterval,
		Run: func(ctx context.Context) error {
			_, err := store.FoldRuntimeCounts(ctx)
			return err
		}})
	if ec.LeftoversInterval > 0 {
		lo := &deprovisioning.Leftovers{Store: store, KCP: kcp, Accounts: accounts, Config: deprov.Config, AVS: deprov.AVS,
			EDP: deprov.EDP, Subaccounts: deprov.Subaccounts, IAS: deprov.IAS}
		periodic = append(periodic, process.Periodic{Name: deprovisioning.LeftoversJob, Interval: ec.LeftoversInterval,
			Run: func(ctx context.Context) error {
				res, err := lo.Run(ctx)
				if res.Instances > 0 {
					log.WithFields(logrus.Fields{"component": deprovisioning.LeftoversJob, "instances": res.Instances,
						"resolved": res.Resolved, "remaining": res.Remaining}).Info("deprovisioning leftovers retried")
				}
				return err
			}})
	}
	if bs := ec.BTPSecrets; bs.Interval > 0 {
		periodic = append(periodic, btpSecretsJob(cfg, store, runtimes, observer, log))
	}
	if err := queue.Work(eng, append(periodic, cleanups...)...); err != nil {
		return nil, err
	}
	if err := queue.Orchestrate(scheduler); err != nil {
		return nil, err
	}
	takeover := process.NewTakeover(store, ec.TakeoverAfter, log.WithField("component", "takeover"))
	return &engine{queue: queue, watcher: watcher, kymaStates: kymaStates, takeover: takeover, watched: []*kube.Watched{sources, pins}, scheduler: scheduler, kcp: kcp, namespace: ns, workers: ec.Workers, accounts: accounts, steps: steps,
		log: log.WithField("component", "readiness")}, nil
}

// wokenJobPoll is how often idle workers look for jobs that became due
// without a notification. A job the control-plane watch wakes (its runtime
// became ready) is such a job: River's default of one second added up to a
// second to every provisioning; a fetch is one indexed statement, so ten a
// second per replica cost PostgreSQL next to nothing.
const wokenJobPoll = 100 * time.Millisecond

// kymaSettings are the installation's choices for Kyma CRs; a plan named
// for internal or beta modules must be one of the catalog's.
func kymaSettings(ec config.Engine, cat *catalog.Catalog) (kyma.Settings, error) {
	for env, plans := range map[string][]string{"APP_KYMA_INTERNAL_PLANS": ec.KymaInternal.Plans, "APP_KYMA_BETA_PLANS": ec.KymaBeta.Plans} {
		for _, p := range plans {
			if _, ok := cat.PlanByName(p); !ok {
				return kyma.Settings{}, fmt.Errorf("%s names plan %q, which the catalog does not have", env, p)
			}
		}
	}
	return kyma.Settings{
		ShootDomain: ec.ShootDomain,
		Internal:    kyma.Audience(ec.KymaInternal),
		Beta:        kyma.Audience(ec.KymaBeta),
	}, nil
}

// loadRules loads and validates the HAP rules (APP_HAP_RULE, APP_HAP_RULE_FILE_PATH, else keb's
// defaults) against the catalog's plans and the enabled ones.
func loadRules(cfg config.Config, cat *catalog.Catalog) (*hyperscaler.Rules, error) {
	var names []string
	for _, p := range cat.Plans() {
		names = append(names, p.Name)
	}
	return hyperscaler.LoadRules(cfg.Engine.HAP.Rules, cfg.Engine.HAP.RuleFile, names, cfg.EnabledPlans)
}

// sharedPlanIDs lists the plans whose runtimes use shared hyperscaler accounts.
func sharedPlanIDs(cat *catalog.Catalog) []string {
	var ids []string
	for _, p := range cat.Plans() {
		if p.SharedPool {
			ids = append(ids, p.ID)
		}
	}
	return ids
}
