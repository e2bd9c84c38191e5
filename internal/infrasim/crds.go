package infrasim

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/resources"
)

// btpOperatorCRDFile is the BtpOperator CRD inside resources.CRDs: BTP Manager
// installs it in every real runtime, and keb's last provisioning step creates a
// BtpOperator CR there.
const btpOperatorCRDFile = "crds/operator.kyma-project.io_btpoperators.yaml"

// RuntimeCRDs returns the CRDs a simulated runtime cluster gets: the BtpOperator
// CRD, read from the binary's embedded resources. Each call decodes fresh
// objects, so callers may hand them to an installer that mutates them.
func RuntimeCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := resources.CRDs.ReadFile(btpOperatorCRDFile)
	if err != nil {
		return nil, fmt.Errorf("reading embedded %s: %w", btpOperatorCRDFile, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		return nil, fmt.Errorf("decoding embedded %s: %w", btpOperatorCRDFile, err)
	}
	return []*apiextensionsv1.CustomResourceDefinition{crd}, nil
}
