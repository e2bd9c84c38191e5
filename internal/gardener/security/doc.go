// Package security is keb's copy of Gardener's security.gardener.cloud/v1alpha1 CredentialsBinding:
// the fields keb reads and writes, validated as Gardener's API server validates them. In a real
// landscape Gardener serves the type; the dev stack and the tests install the CRD `make generate`
// writes from these types (resources/crds), so what they accept is no more than Gardener accepts.
//
// +groupName=security.gardener.cloud
// +versionName=v1alpha1
// +kubebuilder:object:generate=true
package security
