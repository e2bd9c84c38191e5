// Package btpmanager prepares a runtime for BTP Manager: the sap-btp-manager Secret with the
// Service Manager credentials and the BtpOperator CR that BTP Manager reconciles.
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
// operator, its status reports the outcome. Only the oldest one in a cluster is reconciled.
// +kubebuilder:object:root=true
type BtpOperator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BtpOperatorSpec   `json:"spec,omitempty"`
	Status BtpOperatorStatus `json:"status,omitempty"`
}

// BtpOperatorSpec is empty: BTP Manager takes its input from the sap-btp-manager Secret.
// +kubebuilder:object:generate=true
type BtpOperatorSpec struct{}

// BtpOperatorStatus is State plus the Ready condition explaining it.
// +kubebuilder:object:generate=true
type BtpOperatorStatus struct {
	State      string      `json:"state,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
}

// Condition is the subset of metav1.Condition BTP Manager's status carries that keb reads.
// +kubebuilder:object:generate=true
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Condition returns the condition of type t, if set.
func (s BtpOperatorStatus) Condition(t string) (Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return Condition{}, false
}

// BtpOperatorList is a list of BtpOperator CRs.
// +kubebuilder:object:root=true
type BtpOperatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []BtpOperator `json:"items"`
}
