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

// Custom resource policies of a module: whether Lifecycle Manager creates and deletes the module's
// default custom resource along with the module.
const (
	CustomResourcePolicyCreateAndDelete = "CreateAndDelete"
	CustomResourcePolicyIgnore          = "Ignore"
)

var schemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

func init() { schemeBuilder.Register(&Kyma{}, &KymaList{}) }

// AddToScheme registers Kyma and KymaList in s, so that a controller-runtime client built on s
// reads and writes them as typed objects.
func AddToScheme(s *runtime.Scheme) error { return schemeBuilder.AddToScheme(s) }

// Kyma is Lifecycle Manager's Kyma CR: the desired modules of one runtime. Only the fields keb
// writes or reads are modelled; the CRD preserves the rest, but an Update through this type drops
// them, so write it with Create or a merge patch.
type Kyma struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KymaSpec   `json:"spec,omitempty"`
	Status KymaStatus `json:"status,omitempty"`
}

// KymaSpec is the desired state: the default release channel and the modules.
type KymaSpec struct {
	Channel string   `json:"channel"`
	Modules []Module `json:"modules,omitempty"`
}

// Module is one entry of spec.modules. Empty Channel means spec.channel; nil Managed means true.
type Module struct {
	Name                 string `json:"name"`
	Channel              string `json:"channel,omitempty"`
	CustomResourcePolicy string `json:"customResourcePolicy,omitempty"`
	Managed              *bool  `json:"managed,omitempty"`
}

// KymaStatus is what Lifecycle Manager reports; State is Ready, Processing, Warning, Error or Deleting.
type KymaStatus struct {
	State string `json:"state,omitempty"`
}

// KymaList is a list of Kyma CRs.
type KymaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Kyma `json:"items"`
}

// DeepCopyInto copies m into out; Managed is copied, not shared.
func (m *Module) DeepCopyInto(out *Module) {
	*out = *m
	if m.Managed != nil {
		managed := *m.Managed
		out.Managed = &managed
	}
}

// DeepCopyInto copies s into out, modules included.
func (s *KymaSpec) DeepCopyInto(out *KymaSpec) {
	out.Channel = s.Channel
	if s.Modules == nil {
		out.Modules = nil
		return
	}
	out.Modules = make([]Module, len(s.Modules))
	for i := range s.Modules {
		s.Modules[i].DeepCopyInto(&out.Modules[i])
	}
}

// DeepCopyInto copies k into out.
func (k *Kyma) DeepCopyInto(out *Kyma) {
	out.TypeMeta = k.TypeMeta
	k.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	k.Spec.DeepCopyInto(&out.Spec)
	out.Status = k.Status
}

// DeepCopy returns a copy of k.
func (k *Kyma) DeepCopy() *Kyma {
	if k == nil {
		return nil
	}
	out := &Kyma{}
	k.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (k *Kyma) DeepCopyObject() runtime.Object { return k.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *KymaList) DeepCopyInto(out *KymaList) {
	out.TypeMeta = l.TypeMeta
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items == nil {
		out.Items = nil
		return
	}
	out.Items = make([]Kyma, len(l.Items))
	for i := range l.Items {
		l.Items[i].DeepCopyInto(&out.Items[i])
	}
}

// DeepCopy returns a copy of l.
func (l *KymaList) DeepCopy() *KymaList {
	if l == nil {
		return nil
	}
	out := &KymaList{}
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *KymaList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
