// Package kyma is keb's side of Lifecycle Manager's API: the Kyma CR keb creates in the control
// plane for each runtime (its types, from which `make generate` writes keb's copy of the CRD,
// and how keb writes it), what keb reads back from its status, the Kyma version of a runtime and
// its component list.
//
// +groupName=operator.kyma-project.io
// +versionName=v1beta2
package kyma
