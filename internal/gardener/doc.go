// Package gardener holds what keb knows of Gardener's API without importing Gardener: the
// project namespace of a Gardener project and the kinds of the objects the account pool is made
// of. The API types themselves are in the subpackages security (CredentialsBinding,
// security.gardener.cloud/v1alpha1) and core (SecretBinding and Shoot, core.gardener.cloud/v1beta1),
// each with only the fields keb reads or writes and Gardener's validation of them.
package gardener

// ProjectNamespace is the namespace of a Gardener project's bindings and Shoots: garden-<project>.
func ProjectNamespace(project string) string { return "garden-" + project }
