package security

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of CredentialsBinding.
var GroupVersion = schema.GroupVersion{Group: "security.gardener.cloud", Version: "v1alpha1"}

var schemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

func init() { schemeBuilder.Register(&CredentialsBinding{}, &CredentialsBindingList{}) }

// AddToScheme registers CredentialsBinding and CredentialsBindingList.
func AddToScheme(s *k8sruntime.Scheme) error { return schemeBuilder.AddToScheme(s) }

// CredentialsBinding binds a Gardener project to credentials (a Secret) a Shoot is created with.
// keb's account pool claims them by label (hyperscalerType, tenantName, ...): it reads and writes
// only their labels. Gardener's validation (pkg/apis/security/validation): provider.type and every
// part of credentialsRef are required, credentialsRef names a v1 Secret or a
// security.gardener.cloud/v1alpha1 WorkloadIdentity, and provider, credentialsRef and quotas are
// immutable.
//
// +kubebuilder:object:root=true
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=".provider.type"
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=".credentialsRef.name"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type CredentialsBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Provider is the provider type of the credentials.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	Provider Provider `json:"provider"`
	// CredentialsRef names the resource holding the credentials.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	CredentialsRef CredentialsReference `json:"credentialsRef"`
	// Quotas are references to Quota objects.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="field is immutable"
	Quotas []QuotaReference `json:"quotas,omitempty"`
}

// Provider is a binding's provider type (aws, azure, gcp, openstack, ...).
type Provider struct {
	// Type is one provider type.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="!self.contains(',')",message="multiple providers specified"
	Type string `json:"type"`
}

// CredentialsReference is the part of a corev1.ObjectReference Gardener reads of credentialsRef.
//
// +kubebuilder:validation:XValidation:rule="(self.apiVersion == 'v1' && self.kind == 'Secret') || (self.apiVersion == 'security.gardener.cloud/v1alpha1' && self.kind == 'WorkloadIdentity')",message="supported values: /v1, Kind=Secret, security.gardener.cloud/v1alpha1, Kind=WorkloadIdentity"
type CredentialsReference struct {
	// +kubebuilder:validation:MinLength=1
	APIVersion string `json:"apiVersion"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Namespace string `json:"namespace"`
}

// QuotaReference names a Quota object.
type QuotaReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
}

// CredentialsBindingList is a list of CredentialsBindings.
//
// +kubebuilder:object:root=true
type CredentialsBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CredentialsBinding `json:"items"`
}
