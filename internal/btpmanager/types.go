package btpmanager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of the BtpOperator CR
// (resources/crds/operator.kyma-project.io_btpoperators.yaml).
var GroupVersion = schema.GroupVersion{Group: "operator.kyma-project.io", Version: "v1alpha1"}

// Kind is the BtpOperator CR's kind; Resource its plural, as the API server serves it.
const (
	Kind     = "BtpOperator"
	Resource = "btpoperators"
)

// States BTP Manager reports in status.state.
const (
	StateReady      = "Ready"
	StateProcessing = "Processing"
	StateDeleting   = "Deleting"
	StateWarning    = "Warning"
	StateError      = "Error"
)

// ConditionReady is the only condition type BTP Manager sets.
const ConditionReady = "Ready"

// Condition reasons of the Ready condition that keb and its tests act on (BTP Manager has more).
const (
	ReasonReconcileSucceeded = "ReconcileSucceeded"
	ReasonInitialized        = "Initialized"
	ReasonMissingSecret      = "MissingSecret"
	ReasonInvalidSecret      = "InvalidSecret"
	ReasonOlderCRExists      = "OlderCRExists"
)

var schemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

func init() { schemeBuilder.Register(&BtpOperator{}, &BtpOperatorList{}) }

// AddToScheme registers BtpOperator and BtpOperatorList in s, so that a controller-runtime client
// built on s reads and writes them as typed objects. Inject does not need it.
func AddToScheme(s *runtime.Scheme) error { return schemeBuilder.AddToScheme(s) }

// BtpOperator is BTP Manager's CR: its presence triggers the installation of the SAP BTP service
// operator, its status reports the outcome. Only the oldest one in a cluster is reconciled. The
// types are BTP Manager's API in its shape: `make generate` writes keb's copy of the CRD (which
// the simulated runtimes serve once the btp-operator module is installed) from them.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=".status.state"
type BtpOperator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +nullable
	Spec   BtpOperatorSpec   `json:"spec,omitempty"`
	Status BtpOperatorStatus `json:"status,omitempty"`
}

// BtpOperatorSpec is empty: BTP Manager takes its input from the sap-btp-manager Secret.
// +kubebuilder:object:generate=true
type BtpOperatorSpec struct{}

// BtpOperatorStatus is State plus the Ready condition explaining it.
// +kubebuilder:object:generate=true
type BtpOperatorStatus struct {
	// State is one of Processing, Deleting, Ready, Error, Warning.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=Processing;Deleting;Ready;Error;Warning
	State string `json:"state"`

	// Conditions explain State; BTP Manager sets one, of type Ready.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition returns the condition of type t, if set.
func (s BtpOperatorStatus) Condition(t string) (metav1.Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// BtpOperatorList is a list of BtpOperator CRs.
// +kubebuilder:object:root=true
type BtpOperatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []BtpOperator `json:"items"`
}
