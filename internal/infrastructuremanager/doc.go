// Package infrastructuremanager is keb's side of the infrastructure
// manager's API: the Runtime custom resource keb writes to ask for a cluster,
// its status states, and the wire names of the kubeconfig Secret the
// infrastructure manager answers with. The Runtime CRD keb installs
// (resources/crds) is generated from these types by `make generate`.
//
// +groupName=infrastructuremanager.kyma-project.io
// +versionName=v1
package infrastructuremanager
