package core

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of SecretBinding and Shoot.
var GroupVersion = schema.GroupVersion{Group: "core.gardener.cloud", Version: "v1beta1"}

var schemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

func init() {
	schemeBuilder.Register(&SecretBinding{}, &SecretBindingList{}, &Shoot{}, &ShootList{})
}

// AddToScheme registers SecretBinding, Shoot and their lists.
func AddToScheme(s *k8sruntime.Scheme) error { return schemeBuilder.AddToScheme(s) }

// SecretBinding binds a Gardener project to a Secret: the pool object of landscapes older than
// CredentialsBindings. Gardener's validation: secretRef's name and namespace are required and
// immutable, a provider (when set) names one type, quotas are immutable.
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=".secretRef.name"
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=".provider.type"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type SecretBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// SecretRef names the Secret holding the credentials.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	SecretRef SecretReference `json:"secretRef"`
	// Provider is the provider type of the Secret (optional in v1beta1).
	// +optional
	Provider *SecretBindingProvider `json:"provider,omitempty"`
	// Quotas are references to Quota objects.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	Quotas []ObjectReference `json:"quotas,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
}

// SecretBindingProvider is a SecretBinding's provider type.
type SecretBindingProvider struct {
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
}

// ObjectReference names an object by name and namespace.
type ObjectReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
}

// SecretBindingList is a list of SecretBindings.
//
// +kubebuilder:object:root=true
type SecretBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecretBinding `json:"items"`
}

// Shoot is a Gardener cluster. keb reads which binding it was created with
// (spec.credentialsBindingName, or spec.secretBindingName on older landscapes) to never mark an
// account dirty while a cluster uses it; the simulated infrastructure manager writes Shoots in
// the dev stack. Gardener refuses a Shoot naming both bindings.
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Binding",type=string,JSONPath=".spec.credentialsBindingName"
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=".spec.region"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Shoot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ShootSpec `json:"spec"`
}

// ShootSpec is the part of a Shoot's spec keb reads.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.secretBindingName) && has(self.credentialsBindingName))",message="spec.secretBindingName: is incompatible with spec.credentialsBindingName"
type ShootSpec struct {
	// CredentialsBindingName names the Shoot's CredentialsBinding.
	// +optional
	// +kubebuilder:validation:MinLength=1
	CredentialsBindingName *string `json:"credentialsBindingName,omitempty"`
	// SecretBindingName names the Shoot's SecretBinding (older landscapes).
	// +optional
	// +kubebuilder:validation:MinLength=1
	SecretBindingName *string `json:"secretBindingName,omitempty"`
	// Provider is the Shoot's infrastructure provider.
	Provider ShootProvider `json:"provider"`
	// Region is the hyperscaler region.
	// +kubebuilder:validation:MinLength=1
	Region string `json:"region"`
}

// ShootProvider is a Shoot's provider type.
type ShootProvider struct {
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
}

// BindingName is the binding the Shoot uses, whichever field names it.
func (s *Shoot) BindingName() string {
	if s.Spec.CredentialsBindingName != nil {
		return *s.Spec.CredentialsBindingName
	}
	if s.Spec.SecretBindingName != nil {
		return *s.Spec.SecretBindingName
	}
	return ""
}

// ShootList is a list of Shoots.
//
// +kubebuilder:object:root=true
type ShootList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Shoot `json:"items"`
}
