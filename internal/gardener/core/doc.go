// Package core is keb's copy of two of Gardener's core.gardener.cloud/v1beta1 types: SecretBinding
// (the account pool of older landscapes) and Shoot (read to tell whether a cluster still uses a
// binding). Only the fields keb reads or writes are modelled, validated as Gardener's API server
// validates them; the dev stack and the tests install the CRDs `make generate` writes from them.
//
// +groupName=core.gardener.cloud
// +versionName=v1beta1
// +kubebuilder:object:generate=true
package core
