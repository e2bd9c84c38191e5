// Package btpmanager prepares a runtime for BTP Manager: the sap-btp-manager Secret with the
// Service Manager credentials and the BtpOperator CR that BTP Manager reconciles (seed 000).
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

// Condition reasons of the Ready condition that keb and its tests act on (seed 000 lists all).
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
type BtpOperator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BtpOperatorSpec   `json:"spec,omitempty"`
	Status BtpOperatorStatus `json:"status,omitempty"`
}

// BtpOperatorSpec is empty: BTP Manager takes its input from the sap-btp-manager Secret.
type BtpOperatorSpec struct{}

// BtpOperatorStatus is State plus the Ready condition explaining it.
type BtpOperatorStatus struct {
	State      string      `json:"state,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
}

// Condition is the subset of metav1.Condition BTP Manager's status carries that keb reads.
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
type BtpOperatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []BtpOperator `json:"items"`
}

// DeepCopyInto copies s into out; Condition holds only strings, so copying the slice suffices.
func (s *BtpOperatorStatus) DeepCopyInto(out *BtpOperatorStatus) {
	out.State = s.State
	if s.Conditions == nil {
		out.Conditions = nil
		return
	}
	out.Conditions = make([]Condition, len(s.Conditions))
	copy(out.Conditions, s.Conditions)
}

// DeepCopyInto copies b into out.
func (b *BtpOperator) DeepCopyInto(out *BtpOperator) {
	out.TypeMeta = b.TypeMeta
	b.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = b.Spec
	b.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of b.
func (b *BtpOperator) DeepCopy() *BtpOperator {
	if b == nil {
		return nil
	}
	out := &BtpOperator{}
	b.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (b *BtpOperator) DeepCopyObject() runtime.Object { return b.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *BtpOperatorList) DeepCopyInto(out *BtpOperatorList) {
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items == nil {
		out.Items = nil
		return
	}
	out.Items = make([]BtpOperator, len(l.Items))
	for i := range l.Items {
		l.Items[i].DeepCopyInto(&out.Items[i])
	}
}

// DeepCopy returns a copy of l.
func (l *BtpOperatorList) DeepCopy() *BtpOperatorList {
	if l == nil {
		return nil
	}
	out := &BtpOperatorList{}
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *BtpOperatorList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
