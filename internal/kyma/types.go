// Package kyma builds the Kyma CR keb creates in the control plane for Lifecycle Manager, resolves
// the Kyma version of a runtime and composes its component list.
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

// Kyma is Lifecycle Manager's Kyma CR: the desired modules of one runtime. Only the fields keb
// writes or reads are modelled; the CRD preserves the rest, but an Update through this type drops
// them, so write it with Create or a merge patch.
// +kubebuilder:object:root=true
type Kyma struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KymaSpec   `json:"spec,omitempty"`
	Status KymaStatus `json:"status,omitempty"`
}

// KymaSpec is the desired state: the default release channel and the modules.
// +kubebuilder:object:generate=true
type KymaSpec struct {
	Channel string   `json:"channel"`
	Modules []Module `json:"modules,omitempty"`
}

// Module is one entry of spec.modules. Empty Channel means spec.channel; nil Managed means true.
// +kubebuilder:object:generate=true
type Module struct {
	Name                 string `json:"name"`
	Channel              string `json:"channel,omitempty"`
	CustomResourcePolicy string `json:"customResourcePolicy,omitempty"`
	Managed              *bool  `json:"managed,omitempty"`
}

// KymaStatus is what Lifecycle Manager reports; State is Ready, Processing, Warning, Error or Deleting.
// +kubebuilder:object:generate=true
type KymaStatus struct {
	State string `json:"state,omitempty"`
}

// KymaList is a list of Kyma CRs.
// +kubebuilder:object:root=true
type KymaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Kyma `json:"items"`
}
