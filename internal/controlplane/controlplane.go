// Package controlplane is keb's side of the control-plane contract: the
// namespace, label keys and enumerations that the infrastructure manager,
// Lifecycle Manager and operators' tools read on the objects keb writes. Each
// fact has its one home here; the packages that build those objects refer to
// it. Every value is a wire contract: never change one.
package controlplane

// Namespace is the control-plane namespace of keb's custom resources (Runtime
// and Kyma CRs), the runtimes' kubeconfig Secrets, the overrides Secrets and
// the kyma-versions ConfigMap. The infrastructure manager and Lifecycle
// Manager look there; it is not a setting.
const Namespace = "kcp-system"

// Label keys on keb's control-plane objects. Lifecycle Manager, the
// infrastructure manager and operators select runtimes by them.
const (
	// LabelRuntimeID carries the runtime ID on Runtime CRs, Kyma CRs,
	// kubeconfig Secrets and overrides Secrets. The infrastructure manager
	// reads it to name the kubeconfig Secret.
	LabelRuntimeID       = "kyma-project.io/runtime-id"
	LabelInstanceID      = "kyma-project.io/instance-id"
	LabelGlobalAccountID = "kyma-project.io/global-account-id"
	LabelSubAccountID    = "kyma-project.io/subaccount-id"
	LabelPlanID          = "kyma-project.io/broker-plan-id"
	LabelPlanName        = "kyma-project.io/broker-plan-name"
	LabelRegion          = "kyma-project.io/region"
	LabelPlatformRegion  = "kyma-project.io/platform-region"
	LabelShootName       = "kyma-project.io/shoot-name"
	// LabelProvider is the hyperscaler of a Runtime and a Kyma CR, as upstream KEB names it (AWS, Azure, GCP,
	// SapConvergedCloud).
	LabelProvider = "kyma-project.io/provider"
	LabelKymaName = "operator.kyma-project.io/kyma-name"
	// LabelManagedBy must be ManagedByLifecycleManager on Kyma CRs:
	// Lifecycle Manager's cache only sees resources carrying it.
	LabelManagedBy            = "operator.kyma-project.io/managed-by"
	ManagedByLifecycleManager = "lifecycle-manager"
)

// Kyma release channels (the Kyma CR's spec.channel and a module's channel).
// ChannelRegular is used when a request names none.
const (
	ChannelRegular = "regular"
	ChannelFast    = "fast"
)

// Custom resource policies of a Kyma module: whether Lifecycle Manager
// creates and deletes the module's default custom resource with the module.
const (
	CustomResourcePolicyCreateAndDelete = "CreateAndDelete"
	CustomResourcePolicyIgnore          = "Ignore"
)

// Labels and annotations of Kyma CRs that Lifecycle Manager acts on.
const (
	// LabelInternal "true" opens Lifecycle Manager's internal modules to the runtime.
	LabelInternal = "operator.kyma-project.io/internal"
	// LabelBeta "true" opens Lifecycle Manager's beta modules to the runtime.
	LabelBeta = "operator.kyma-project.io/beta"
	// AnnotationSKRDomain is the runtime's domain, <shoot>.<shoot domain>: Lifecycle Manager's
	// watcher needs it and puts a Kyma CR without it in Error.
	AnnotationSKRDomain = "skr-domain"
)
