package kyma

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of the Kyma CR (resources/crds/operator.kyma-project.io_kymas.yaml).
var GroupVersion = schema.GroupVersion{Group: "operator.kyma-project.io", Version: "v1beta2"}

// Kind is the Kyma CR's kind.
const Kind = "Kyma"

var schemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

func init() { schemeBuilder.Register(&Kyma{}, &KymaList{}) }

// AddToScheme registers Kyma and KymaList in s, so that a controller-runtime client built on s
// reads and writes them as typed objects.
func AddToScheme(s *runtime.Scheme) error { return schemeBuilder.AddToScheme(s) }

// Kyma is Lifecycle Manager's Kyma CR: the desired modules of one runtime, and Lifecycle
// Manager's report on them. The types are Lifecycle Manager's API in its shape, with its
// validation markers: `make generate` writes keb's copy of the CRD from them (the dev stack and
// the tests install it), so what the tests' API server accepts is what Lifecycle Manager's does.
//
// keb writes only the labels, the skr-domain annotation, spec.channel and spec.modules (Apply at
// creation, merge patches of the changed fields later: see apply.go); every other field belongs
// to Lifecycle Manager or to operators and survives keb's writes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Kyma struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KymaSpec   `json:"spec,omitempty"`
	Status KymaStatus `json:"status,omitempty"`
}

// KymaSpec is the desired state: the default release channel and the modules.
// +kubebuilder:object:generate=true
type KymaSpec struct {
	// Channel is the release channel modules are looked up in unless they name their own.
	// +kubebuilder:validation:Pattern:=^[a-z]+$
	// +kubebuilder:validation:MaxLength:=32
	// +kubebuilder:validation:MinLength:=3
	Channel string `json:"channel"`

	// SkipMaintenanceWindows lets module upgrades that need downtime bypass the maintenance
	// windows. keb never writes it.
	SkipMaintenanceWindows bool `json:"skipMaintenanceWindows,omitempty"`

	// Modules are the modules to install, one entry per name.
	// +listType=map
	// +listMapKey=name
	Modules []Module `json:"modules,omitempty"`
}

// Module is one entry of spec.modules. Empty Channel means spec.channel.
// +kubebuilder:object:generate=true
type Module struct {
	// Name is the module's name (its ModuleTemplate's operator.kyma-project.io/module-name label).
	Name string `json:"name"`

	// ControllerName selects the controller that reconciles the module. keb never writes it.
	ControllerName string `json:"controller,omitempty"`

	// Channel is the module's release channel, when it differs from spec.channel.
	// +kubebuilder:validation:Pattern:=^[a-z]+$
	// +kubebuilder:validation:MaxLength:=32
	// +kubebuilder:validation:MinLength:=3
	Channel string `json:"channel,omitempty"`

	// CustomResourcePolicy says whether Lifecycle Manager creates and deletes the module's
	// default CR with the module.
	// +kubebuilder:default:=CreateAndDelete
	// +kubebuilder:validation:Enum=CreateAndDelete;Ignore
	CustomResourcePolicy string `json:"customResourcePolicy,omitempty"`

	// RemoteModuleTemplateRef is deprecated in Lifecycle Manager's API and has no effect.
	RemoteModuleTemplateRef string `json:"remoteModuleTemplateRef,omitempty"`

	// Managed false leaves the module's resources to the user; unset means true.
	// +kubebuilder:default:=true
	Managed *bool `json:"managed,omitempty"`
}

// State is the state Lifecycle Manager reports for a Kyma CR and each of its modules.
// +kubebuilder:validation:Enum=Processing;Deleting;Ready;Error;"";Warning;Unmanaged
type State string

// States of a Kyma CR (status.state) and of its modules (status.modules[].state). Unmanaged is
// a module's only.
const (
	StateReady      State = "Ready"
	StateProcessing State = "Processing"
	StateError      State = "Error"
	StateWarning    State = "Warning"
	StateDeleting   State = "Deleting"
	StateUnmanaged  State = "Unmanaged"
)

// States are the states a Kyma CR can report, in the order operators read them (the healthy one
// first).
var States = []State{StateReady, StateProcessing, StateWarning, StateError, StateDeleting}

// KymaStatus is what Lifecycle Manager reports.
// +kubebuilder:object:generate=true
type KymaStatus struct {
	LastOperation `json:"lastOperation,omitempty"`

	// State aggregates the modules' states and the conditions.
	State State `json:"state,omitempty"`

	// Conditions explain State.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Modules reports each module of spec.modules.
	Modules []ModuleStatus `json:"modules,omitempty"`

	// ActiveChannel is the spec.channel last reconciled.
	// +optional
	ActiveChannel string `json:"activeChannel,omitempty"`
}

// LastOperation is Lifecycle Manager's last reconciliation: a progress or error message and
// when it was written.
// +kubebuilder:object:generate=true
type LastOperation struct {
	Operation      string      `json:"operation"`
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
}

// ModuleStatus is Lifecycle Manager's report on one module.
// +kubebuilder:object:generate=true
type ModuleStatus struct {
	// Name is the module's name in spec.modules.
	Name string `json:"name"`
	// FQDN is the module's fully qualified name, from its ModuleTemplate.
	FQDN string `json:"fqdn,omitempty"`
	// Channel and Version are the channel and version installed.
	Channel string `json:"channel,omitempty"`
	Version string `json:"version,omitempty"`
	// Message explains State, for example why the module is in Error.
	Message string `json:"message,omitempty"`
	// State is the module's state; for a module with a default CR, that CR's status.state
	// (the btp-operator module's state is its BtpOperator CR's).
	State State `json:"state"`
	// Manifest, Resource and Template track the module's Manifest CR, its default CR and its
	// ModuleTemplate.
	Manifest *TrackingObject `json:"manifest,omitempty"`
	Resource *TrackingObject `json:"resource,omitempty"`
	// +optional
	Template *TrackingObject `json:"template,omitempty"`
}

// TrackingObject names an object Lifecycle Manager tracks for a module.
// +kubebuilder:object:generate=true
type TrackingObject struct {
	metav1.TypeMeta `json:",inline"`
	PartialMeta     `json:"metadata,omitempty"`
}

// PartialMeta is the part of an object's metadata a TrackingObject keeps.
// +kubebuilder:object:generate=true
type PartialMeta struct {
	// +optional
	Name string `json:"name"`
	// +optional
	Namespace string `json:"namespace"`
	// +optional
	Generation int64 `json:"generation,omitempty"`
}

// KymaList is a list of Kyma CRs.
// +kubebuilder:object:root=true
type KymaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Kyma `json:"items"`
}
