package infrastructuremanager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kyma-keb/keb/internal/controlplane"
)

// These types are the infrastructure manager's (KIM's) Runtime API as
// docs/deploying.md's control-plane contract describes it: every field its CRD
// knows, with its required fields and enums, and no field of keb's own. A
// field is required unless it is marked optional or omitempty, as
// controller-gen reads them. keb builds a new Runtime with these types and
// changes an existing one only by patching the fields an operation changes
// (Patch), so that a field these types lack survives.

// State is a Runtime CR's status.state, written by the infrastructure
// manager. The CRD's enum lists exactly the State constants.
type State string

// Runtime states.
const (
	// StatePending means the cluster is being created or a change rolled out.
	StatePending State = "Pending"
	// StateReady means the cluster exists, its kubeconfig Secret is written,
	// OIDC and administrators are configured.
	StateReady State = "Ready"
	// StateFailed means the last attempt failed; the conditions say why. The
	// infrastructure manager retries some failures (Gardener errors) and
	// returns to Pending or Ready, so Failed is not final.
	StateFailed State = "Failed"
	// StateTerminating means the Runtime CR is being deleted and its cluster torn down.
	StateTerminating State = "Terminating"
)

// Condition types the infrastructure manager reports in status.conditions.
const (
	ConditionProvisioned     = "Provisioned"
	ConditionKubeconfigReady = "KubeconfigReady"
	ConditionOIDCConfigured  = "OidcConfigured"
	ConditionConfigured      = "Configured"
	ConditionDeprovisioned   = "Deprovisioned"
)

// Condition reasons the infrastructure manager reports (a selection: keb
// shows any reason as it is, and decides nothing on one).
const (
	ReasonProcessing             = "Processing"
	ReasonShootCreationCompleted = "ShootCreationCompleted"
	ReasonGardenerClusterReady   = "GardenerClusterCRReady"
	ReasonOIDCConfigured         = "OidcConfigured"
	ReasonConfigurationCompleted = "ConfigurationCompleted"
	ReasonConfigurationError     = "ConfigurationError"
	ReasonGardenerError          = "GardenerErr"
	ReasonSeedNotFound           = "SeedNotFound"
	ReasonDeletion               = "Deletion"
)

// Finalizer is the finalizer the infrastructure manager adds to a Runtime
// CR and removes once the cluster is gone.
const Finalizer = "runtime-controller.infrastructure-manager.kyma-project.io/deletion-hook"

// KymaWorkerName names the one worker pool of spec.shoot.provider.workers,
// the pool Kyma runs on.
const KymaWorkerName = "cpu-worker-0"

// Runtime asks the infrastructure manager for a Kyma runtime cluster
// (infrastructuremanager.kyma-project.io/v1, kind Runtime, in
// controlplane.Namespace, named after the runtime ID).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Shoot",type=string,JSONPath=`.spec.shoot.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
type Runtime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RuntimeSpec   `json:"spec,omitempty"`
	Status RuntimeStatus `json:"status,omitempty"`
}

// RuntimeList is a list of Runtime CRs.
// +kubebuilder:object:root=true
type RuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Runtime `json:"items"`
}

// RuntimeSpec is the cluster to create and who may administer it.
// +kubebuilder:object:generate=true
type RuntimeSpec struct {
	Shoot    RuntimeShoot `json:"shoot"`
	Security Security     `json:"security"`
	// ImageRegistryCache turns the runtime's image registry cache on; keb
	// never sets it.
	// +optional
	ImageRegistryCache *ImageRegistryCache `json:"imageRegistryCache,omitempty"`
}

// ImageRegistryCache configures the runtime's image registry cache.
// +kubebuilder:object:generate=true
type ImageRegistryCache struct {
	Enabled bool `json:"enabled"`
}

// ShootPurpose is Gardener's shoot purpose.
// +kubebuilder:validation:Enum=evaluation;testing;development;production
type ShootPurpose string

// RuntimeShoot is the Gardener shoot behind the runtime.
// +kubebuilder:object:generate=true
type RuntimeShoot struct {
	Name           string       `json:"name"`
	Purpose        ShootPurpose `json:"purpose"`
	PlatformRegion string       `json:"platformRegion"`
	Region         string       `json:"region"`
	// +optional
	LicenceType *string `json:"licenceType,omitempty"`
	// SecretBindingName names the Gardener SecretBinding (or
	// CredentialsBinding) of the hyperscaler account in the Gardener
	// project, not a Secret.
	SecretBindingName string `json:"secretBindingName"`
	// EnforceSeedLocation places the control plane in the runtime's region.
	// +optional
	EnforceSeedLocation *bool `json:"enforceSeedLocation,omitempty"`
	// +optional
	Kubernetes Kubernetes `json:"kubernetes,omitempty"`
	Provider   Provider   `json:"provider"`
	Networking Networking `json:"networking"`
	// +optional
	ControlPlane *ControlPlane `json:"controlPlane,omitempty"`
}

// Kubernetes is the cluster's Kubernetes; an absent version is the
// infrastructure manager's default.
// +kubebuilder:object:generate=true
type Kubernetes struct {
	// +optional
	Version *string `json:"version,omitempty"`
	// +optional
	KubeAPIServer APIServer `json:"kubeAPIServer,omitempty"`
}

// APIServer configures the runtime's API server.
// +kubebuilder:object:generate=true
type APIServer struct {
	// OIDCConfig is the API server's OpenID Connect authenticator (the oidc
	// parameter); absent leaves the infrastructure manager's default.
	// +optional
	OIDCConfig *OIDCConfig `json:"oidcConfig,omitempty"`
	// AdditionalOIDCConfig are the API server's OpenID Connect providers of
	// the oidc parameter's list form; an empty list means none.
	// +optional
	AdditionalOIDCConfig *[]OIDCConfig `json:"additionalOidcConfig,omitempty"`
	// ACL limits who reaches the API server (the accessControlList
	// parameter).
	// +optional
	ACL *ACL `json:"acl,omitempty"`
}

// ACL is the API server's access control list.
// +kubebuilder:object:generate=true
type ACL struct {
	AllowedCIDRs []string `json:"allowedCIDRs"`
}

// OIDCConfig is Gardener's OpenID Connect authenticator configuration.
// +kubebuilder:object:generate=true
type OIDCConfig struct {
	// +optional
	ClientID *string `json:"clientID,omitempty"`
	// +optional
	IssuerURL *string `json:"issuerURL,omitempty"`
	// +optional
	GroupsClaim *string `json:"groupsClaim,omitempty"`
	// +optional
	GroupsPrefix *string `json:"groupsPrefix,omitempty"`
	// +optional
	SigningAlgs []string `json:"signingAlgs,omitempty"`
	// +optional
	UsernameClaim *string `json:"usernameClaim,omitempty"`
	// +optional
	UsernamePrefix *string `json:"usernamePrefix,omitempty"`
	// +optional
	RequiredClaims map[string]string `json:"requiredClaims,omitempty"`
}

// Provider is the hyperscaler and the worker pools.
// +kubebuilder:object:generate=true
type Provider struct {
	// +kubebuilder:validation:Enum=aws;azure;gcp;openstack
	Type string `json:"type"` // contracts.md's enum: alicloud and gdch runtimes are refused, as the real CRD refuses them
	// Workers holds exactly the Kyma worker pool, KymaWorkerName.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	Workers []Worker `json:"workers"`
	// AdditionalWorkers are the additionalWorkerNodePools parameter's pools.
	// +optional
	AdditionalWorkers *[]Worker `json:"additionalWorkers,omitempty"`
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	ControlPlaneConfig *k8sruntime.RawExtension `json:"controlPlaneConfig,omitempty"`
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	InfrastructureConfig *k8sruntime.RawExtension `json:"infrastructureConfig,omitempty"`
}

// Worker is a Gardener worker pool.
// +kubebuilder:object:generate=true
type Worker struct {
	Name    string  `json:"name"`
	Machine Machine `json:"machine"`
	Minimum int32   `json:"minimum"`
	Maximum int32   `json:"maximum"`
	// MaxSurge is how many machines a roll-out may add (keb: the zones count).
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// MaxUnavailable is how many machines a roll-out may take away (keb: 0).
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// +optional
	Zones []string `json:"zones,omitempty"`
	// +optional
	Volume *Volume `json:"volume,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Taints []Taint `json:"taints,omitempty"`
	// CRI is the container runtime (gVisor); keb never sets it.
	// +optional
	CRI *CRI `json:"cri,omitempty"`
	// +optional
	Kubernetes *WorkerKubernetes `json:"kubernetes,omitempty"`
}

// Machine is a worker's machine type and image.
// +kubebuilder:object:generate=true
type Machine struct {
	Type string `json:"type"`
	// Image is the nodes' OS image; absent is Gardener's default.
	// +optional
	Image *ShootMachineImage `json:"image,omitempty"`
	// +optional
	Architecture *string `json:"architecture,omitempty"`
}

// ShootMachineImage is a machine image and, optionally, its version.
// +kubebuilder:object:generate=true
type ShootMachineImage struct {
	Name string `json:"name"`
	// +optional
	Version *string `json:"version,omitempty"`
}

// Volume is a worker's root disk.
// +kubebuilder:object:generate=true
type Volume struct {
	// +optional
	Name *string `json:"name,omitempty"`
	// +optional
	Type *string `json:"type,omitempty"`
	// Size is a quantity such as "80Gi".
	VolumeSize string `json:"size"`
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
}

// TaintEffect is a Kubernetes taint effect.
// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
type TaintEffect string

// Taint is a Kubernetes taint of a worker pool's nodes.
// +kubebuilder:object:generate=true
type Taint struct {
	Key string `json:"key"`
	// +optional
	Value  string      `json:"value,omitempty"`
	Effect TaintEffect `json:"effect"`
}

// CRI is a worker's container runtime (Gardener's CRI).
// +kubebuilder:object:generate=true
type CRI struct {
	Name string `json:"name"`
	// ContainerRuntimes are further runtimes beside the CRI, such as
	// gVisor (the gvisor parameter).
	// +optional
	ContainerRuntimes []ContainerRuntime `json:"containerRuntimes,omitempty"`
}

// ContainerRuntime is an additional container runtime of a worker pool.
type ContainerRuntime struct {
	Type string `json:"type"`
}

// Container runtime names keb writes for the gvisor parameter.
const (
	CRIContainerd = "containerd"
	RuntimeGVisor = "gvisor"
)

// WorkerKubernetes is a worker pool's kubelet configuration.
// +kubebuilder:object:generate=true
type WorkerKubernetes struct {
	// +optional
	Kubelet *Kubelet `json:"kubelet,omitempty"`
}

// Kubelet configures a worker pool's kubelets.
// +kubebuilder:object:generate=true
type Kubelet struct {
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
}

// NetworkingCalico is the shoot networking type upstream KEB always writes.
const NetworkingCalico = "calico"

// Networking are the cluster's CIDRs.
// +kubebuilder:object:generate=true
type Networking struct {
	// +optional
	Type     *string `json:"type,omitempty"`
	Pods     string  `json:"pods"`
	Nodes    string  `json:"nodes"`
	Services string  `json:"services"`
}

// ControlPlane configures the shoot's control plane.
// +kubebuilder:object:generate=true
type ControlPlane struct {
	// +optional
	HighAvailability *HighAvailability `json:"highAvailability,omitempty"`
}

// HighAvailability spreads the control plane.
// +kubebuilder:object:generate=true
type HighAvailability struct {
	FailureTolerance FailureTolerance `json:"failureTolerance"`
}

// FailureTolerance says what the control plane survives.
// +kubebuilder:object:generate=true
type FailureTolerance struct {
	// +kubebuilder:validation:Enum=node;zone
	Type string `json:"type"`
}

// Security lists who administers the cluster and how its traffic is filtered.
// +kubebuilder:object:generate=true
type Security struct {
	Administrators []string           `json:"administrators"`
	Networking     NetworkingSecurity `json:"networking"`
}

// NetworkingSecurity filters the cluster's traffic.
// +kubebuilder:object:generate=true
type NetworkingSecurity struct {
	Filter Filter `json:"filter"`
}

// Filter turns egress and ingress filtering on or off.
// +kubebuilder:object:generate=true
type Filter struct {
	// +optional
	Ingress *Ingress `json:"ingress,omitempty"`
	Egress  Egress   `json:"egress"`
}

// Ingress filtering (the ingressFiltering parameter).
// +kubebuilder:object:generate=true
type Ingress struct {
	Enabled bool `json:"enabled"`
}

// Egress filtering: on unless the instance is external.
// +kubebuilder:object:generate=true
type Egress struct {
	Enabled bool `json:"enabled"`
}

// RuntimeStatus is written by the infrastructure manager through the status
// subresource. There is no message and no observedGeneration: messages are
// the conditions', and docs/architecture.md says how keb tells that a change
// it wrote was taken up.
// +kubebuilder:object:generate=true
type RuntimeStatus struct {
	// State is required in a status, as in the infrastructure manager's CRD.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=Pending;Ready;Terminating;Failed
	State State `json:"state,omitempty"`
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningCompleted is set once the cluster was first Ready.
	// +optional
	ProvisioningCompleted bool `json:"provisioningCompleted,omitempty"`
}

// RuntimeID returns the runtime ID of the CR: its controlplane.LabelRuntimeID label, or its
// name when the label is missing (keb names Runtime CRs after the runtime ID).
func (r *Runtime) RuntimeID() string {
	if id := r.Labels[controlplane.LabelRuntimeID]; id != "" {
		return id
	}
	return r.Name
}

// KymaWorker returns the index of the Kyma worker pool in
// spec.shoot.provider.workers, or -1.
func (s *RuntimeSpec) KymaWorker() int {
	for i, w := range s.Shoot.Provider.Workers {
		if w.Name == KymaWorkerName {
			return i
		}
	}
	return -1
}
