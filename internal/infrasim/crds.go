package infrasim

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kyma-keb/keb/resources"
)

// RuntimeCRDs returns the CRDs a simulated runtime cluster gets: the BtpOperator
// CRD (BTP Manager installs it in every real runtime, and keb's last
// provisioning step creates a BtpOperator CR there).
func RuntimeCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return resources.LoadCRDs(resources.BtpOperatorCRD)
}
