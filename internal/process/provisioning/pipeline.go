// Package provisioning holds the steps that turn an accepted provisioning
// into a running Kyma runtime, one file per step. Step names are persisted
// in operations' checkpoints: never rename one.
package provisioning

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/avs"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/edp"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/ias"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/lms"
	"github.com/kyma-keb/keb/internal/maintenance"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// Config holds the settings the provisioning steps read.
type Config struct {
	// DefaultKymaVersion is APP_KYMA_VERSION.
	DefaultKymaVersion string
	// OnDemandVersion lets the kymaVersion parameter choose the version.
	OnDemandVersion bool
	// Namespace is the control-plane namespace of Runtime and Kyma CRs,
	// kubeconfigs and overrides (kcp-system).
	Namespace string
	// Kyma are the installation's choices for Kyma CRs; its ShootDomain
	// also builds a runtime's dashboard URL.
	Kyma kyma.Settings
	// Timeouts of waiting steps.
	AccountTimeout, RuntimeTimeout, BTPManagerTimeout time.Duration
	// AwaitKymaReady makes check_kyma wait for the Kyma CR to be Ready, at
	// most KymaTimeout (polling every RuntimePoll).
	AwaitKymaReady bool
	KymaTimeout    time.Duration
	// Poll intervals of waiting steps; watches usually wake them sooner.
	AccountPoll, RuntimePoll, BTPManagerPoll time.Duration
	// MaintenanceWindows resolves each runtime's maintenance window.
	MaintenanceWindows maintenance.Config
	// HAP chooses each runtime's account pool.
	HAP HAP
	// Runtime are the settings every Runtime CR carries.
	Runtime RuntimeSettings
	// AVS is the AVS integration's settings; it adds its steps only when
	// it provisions (avs.Config.Provisions).
	AVS avs.Config
	// EDP is the EDP integration's settings; it adds its step when enabled.
	EDP edp.Config
	// IAS is the IAS integration's settings; it adds its steps when
	// enabled.
	IAS ias.Config
	// LMS is the LMS integration's settings; it adds its steps when
	// enabled.
	LMS lms.Config
	// LMSPoll is how often the LMS certificates step reads the callback
	// URL (0: upstream's 15 s).
	LMSPoll time.Duration
}

// RuntimeSettings are what keb's settings put into every Runtime CR it
// writes, where and when upstream KEB writes its infrastructureManager
// settings: the Kubernetes version (spec.shoot.kubernetes.version), the
// worker nodes' image (every worker's machine.image, written even when
// empty, unless the plans file names one for the provider), and the control
// plane's failure tolerance (node or zone; written on paid plans other than
// azure_lite, none when ""); for the global accounts MaxPodsGlobalAccounts
// names ("*": all), every worker pool's kubelet maxPods.
type RuntimeSettings struct {
	KubernetesVersion                 string
	MachineImage, MachineImageVersion string
	ControlPlaneFailureTolerance      string
	MaxPods                           int
	MaxPodsGlobalAccounts             []string
}

// Deps are the parts the steps use.
type Deps struct {
	Config   Config
	Catalog  *catalog.Catalog
	Store    runtimeIdentityStore
	Finisher provisionedStore
	KCP      client.Client
	Accounts *hyperscaler.AccountPool
	// AccountStore records each instance's account.
	AccountStore AccountStore
	Runtimes     *runtimeclient.Cache
	// OverrideSources reads the override ConfigMaps and Secrets, and
	// VersionPins the Kyma version pins; nil: KCP.
	OverrideSources, VersionPins client.Reader
	// Watch is what the control-plane watch has seen of Runtime and Kyma
	// CRs and kubeconfig Secrets; nil: everything is read from KCP.
	Watch process.SeenReader
	// AVS creates the runtimes' AVS evaluations when Config.AVS provisions.
	AVS avsCreator
	// EDP registers the runtimes' subaccounts when Config.EDP is enabled.
	EDP edpRegistrar
	// Director confirms each runtime's dashboard URL; nil: no such step.
	Director consoleURLReader
	// IAS registers the runtimes' Grafana when Config.IAS is enabled.
	IAS iasClient
	// LMS sets up the runtimes' LMS tenants and certificates when
	// Config.LMS is enabled, LMSTenants records the tenants.
	LMS        lmsClient
	LMSTenants lmsTenantStore
}

// lmsClient is what the LMS steps call (*lms.Client is one).
type lmsClient interface {
	lmsTenantCreator
	lmsCertifier
}

// iasClient is what the IAS steps call (*ias.Client is one).
type iasClient interface {
	iasRegistrar
	iasTyper
}

// Pipeline returns the provisioning pipeline.
func Pipeline(d Deps) process.Pipeline {
	// The optional integrations' steps are in the pipeline only when
	// configured: without them the steps (and their checkpoints) are
	// exactly keb's own.
	withAVS := d.Config.AVS.Provisions()
	steps := []process.Step{
		&Initialization{Catalog: d.Catalog, Store: d.Store, KCP: d.KCP, VersionPins: d.VersionPins, Seen: seenLister(d.Watch), Config: d.Config},
		&ResolveHyperscalerSecret{Catalog: d.Catalog, Accounts: d.Accounts, Store: d.AccountStore, Config: d.Config},
	}
	if withAVS {
		// Before the cluster is requested, as upstream: a runtime is
		// monitored from its start.
		steps = append(steps, &AVSInternalEvaluation{AVS: d.AVS, Config: d.Config.AVS, ShootDomain: d.Config.Kyma.ShootDomain})
	}
	if e := d.Config.EDP; e.Enabled() {
		// After AVS, before the cluster, as upstream.
		reg := EDPRegistration{EDP: d.EDP, Environment: e.Environment}
		if e.Required {
			steps = append(steps, &reg)
		} else {
			steps = append(steps, &OptionalEDPRegistration{reg})
		}
	}
	withLMS := d.Config.LMS.Enabled()
	lmsTenant := LMSTenant{LMS: d.LMS, Tenants: d.LMSTenants, Config: d.Config.LMS}
	if withLMS {
		// With EDP, before the cluster, as upstream.
		if d.Config.LMS.Mandatory {
			steps = append(steps, &lmsTenant)
		} else {
			steps = append(steps, &OptionalLMSTenant{lmsTenant})
		}
	}
	steps = append(steps,
		// The components first: the overrides Secret carries them.
		&Components{Catalog: d.Catalog},
		&Overrides{Catalog: d.Catalog, KCP: d.KCP, Sources: d.OverrideSources, Config: d.Config},
	)
	withIAS := d.Config.IAS.Enabled()
	if withIAS {
		// After the overrides Secret, which gets Grafana's client, and
		// before the cluster is requested, as upstream.
		steps = append(steps, &IASRegistration{IAS: d.IAS, KCP: d.KCP, Namespace: d.Config.Namespace,
			IdentityProvider: d.Config.IAS.IdentityProvider})
	}
	if withLMS {
		// After the overrides Secret, which gets Fluent Bit's certificate,
		// and before the cluster is requested, as upstream.
		c := LMSCertificates{LMS: d.LMS, Tenant: &lmsTenant, KCP: d.KCP, Namespace: d.Config.Namespace, PollInterval: d.Config.LMSPoll}
		if d.Config.LMS.Mandatory {
			steps = append(steps, &c)
		} else {
			steps = append(steps, &OptionalLMSCertificates{c})
		}
	}
	steps = append(steps,
		&CreateRuntime{KCP: d.KCP, Catalog: d.Catalog, Config: d.Config},
		&CheckRuntime{KCP: d.KCP, Watch: d.Watch, Config: d.Config},
	)
	if d.Director != nil {
		// Once the cluster is ready, as upstream's check_runtime stage.
		steps = append(steps, &CheckDashboardURL{Director: d.Director, ShootDomain: d.Config.Kyma.ShootDomain})
	}
	steps = append(steps,
		&ApplyKyma{KCP: d.KCP, Catalog: d.Catalog, Config: d.Config},
		&InjectBTPManager{Runtimes: d.Runtimes, Config: d.Config},
		&CheckKyma{KCP: d.KCP, Watch: d.Watch, Config: d.Config},
	)
	if withAVS {
		// Once the runtime answers: its health endpoint is what it checks.
		steps = append(steps, &AVSExternalEvaluation{AVS: d.AVS, Config: d.Config.AVS, ShootDomain: d.Config.Kyma.ShootDomain})
	}
	if withIAS {
		// Upstream's post-actions, after the AVS external evaluation.
		steps = append(steps, &IASType{IAS: d.IAS, ShootDomain: d.Config.Kyma.ShootDomain})
	}
	return process.Pipeline{
		Steps:     steps,
		Succeeded: recordProvisioned(d.Finisher, d.Config),
		Done:      "Operation succeeded: the Kyma runtime is ready",
	}
}

// seenLister is the watch's lister, when it has one (the engine's Watcher).
func seenLister(w process.SeenReader) process.SeenLister {
	l, _ := w.(process.SeenLister)
	return l
}
