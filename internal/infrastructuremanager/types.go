package infrastructuremanager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/controlplane"
)

// State is a Runtime CR's status.state, written by the infrastructure
// manager. The CRD's enum lists exactly the State constants.
type State string

// Runtime states.
const (
	// StatePending means the cluster is being created.
	StatePending State = "Pending"
	// StateReady means the cluster exists and its kubeconfig Secret is written.
	StateReady State = "Ready"
	// StateFailed means the cluster could not be created; status.message says why.
	StateFailed State = "Failed"
	// StateTerminating means the Runtime CR is being deleted and its cluster torn down.
	StateTerminating State = "Terminating"
)

// Runtime asks the infrastructure manager for a Kyma runtime cluster
// (infrastructuremanager.kyma-project.io/v1, kind Runtime, in
// controlplane.Namespace).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Shoot",type=string,JSONPath=`.spec.shoot.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
type Runtime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RuntimeSpec   `json:"spec"`
	Status RuntimeStatus `json:"status,omitempty"`
}

// RuntimeList is a list of Runtime CRs.
// +kubebuilder:object:root=true
type RuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Runtime `json:"items"`
}

// RuntimeSpec describes the cluster to create and, in Kyma, what keb installs on it.
// +kubebuilder:object:generate=true
type RuntimeSpec struct {
	Shoot    RuntimeShoot    `json:"shoot"`
	Security RuntimeSecurity `json:"security,omitempty"`
	// Kyma is keb's addition to upstream's spec: what to install once the cluster is Ready.
	Kyma RuntimeKyma `json:"kyma,omitempty"`
}

// RuntimeShoot is the Gardener shoot behind the runtime.
// +kubebuilder:object:generate=true
type RuntimeShoot struct {
	Name              string          `json:"name"`
	Purpose           string          `json:"purpose,omitempty"`
	PlatformRegion    string          `json:"platformRegion,omitempty"`
	Region            string          `json:"region"`
	SecretBindingName string          `json:"secretBindingName,omitempty"`
	Provider          RuntimeProvider `json:"provider"`
	// Kubernetes is the cluster's Kubernetes; an empty version is the
	// infrastructure manager's default.
	Kubernetes RuntimeKubernetes `json:"kubernetes,omitempty"`
}

// RuntimeKubernetes is the Kubernetes of the cluster.
// +kubebuilder:object:generate=true
type RuntimeKubernetes struct {
	Version string `json:"version,omitempty"`
	// KubeAPIServer configures the cluster's API server.
	KubeAPIServer APIServer `json:"kubeAPIServer,omitempty"`
}

// APIServer configures a runtime's API server, upstream's
// spec.shoot.kubernetes.kubeAPIServer.
// +kubebuilder:object:generate=true
type APIServer struct {
	// OIDCConfig is the API server's OpenID Connect authenticator (the
	// oidc parameter); nil leaves the infrastructure manager's default.
	OIDCConfig *OIDCConfig `json:"oidcConfig,omitempty"`
}

// OIDCConfig is an OpenID Connect authenticator, in upstream's field names.
// +kubebuilder:object:generate=true
type OIDCConfig struct {
	ClientID       string   `json:"clientID"`
	IssuerURL      string   `json:"issuerURL"`
	GroupsClaim    string   `json:"groupsClaim,omitempty"`
	SigningAlgs    []string `json:"signingAlgs,omitempty"`
	UsernameClaim  string   `json:"usernameClaim,omitempty"`
	UsernamePrefix string   `json:"usernamePrefix,omitempty"`
}

// RuntimeProvider is the hyperscaler and the worker pools.
// +kubebuilder:object:generate=true
type RuntimeProvider struct {
	Type    string   `json:"type"`
	Workers []Worker `json:"workers,omitempty"`
}

// Worker is one autoscaled worker pool.
// +kubebuilder:object:generate=true
type Worker struct {
	Name        string   `json:"name"`
	MachineType string   `json:"machineType"`
	Minimum     int      `json:"minimum"`
	Maximum     int      `json:"maximum"`
	Zones       []string `json:"zones,omitempty"`
	// MachineImage and MachineImageVersion are the nodes' OS image; empty
	// is the infrastructure manager's default.
	MachineImage        string `json:"machineImage,omitempty"`
	MachineImageVersion string `json:"machineImageVersion,omitempty"`
}

// RuntimeSecurity lists who administers the cluster.
// +kubebuilder:object:generate=true
type RuntimeSecurity struct {
	Administrators []string `json:"administrators,omitempty"`
}

// RuntimeKyma is what keb installs into the runtime.
// +kubebuilder:object:generate=true
type RuntimeKyma struct {
	Version            string   `json:"version,omitempty"`
	Components         []string `json:"components,omitempty"`
	OverridesSecretRef string   `json:"overridesSecretRef,omitempty"`
}

// RuntimeStatus is written by the infrastructure manager through the status subresource.
// +kubebuilder:object:generate=true
type RuntimeStatus struct {
	// State is one of StatePending, StateReady, StateFailed, StateTerminating.
	// +kubebuilder:validation:Enum=Pending;Ready;Failed;Terminating
	State   State  `json:"state,omitempty"`
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the metadata.generation the state refers to: a
	// changed spec (an upgrade) is applied once it reaches the generation.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// RuntimeID returns the runtime ID of the CR: its controlplane.LabelRuntimeID label, or its
// name when the label is missing (keb names Runtime CRs after the runtime ID).
func (r *Runtime) RuntimeID() string {
	if id := r.Labels[controlplane.LabelRuntimeID]; id != "" {
		return id
	}
	return r.Name
}
