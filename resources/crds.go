package resources

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// CRDs holds the CustomResourceDefinitions keb writes or reads (Runtime, Kyma,
// BtpOperator), under crds/. The dev stack and the envtest suites install
// them; a deployment applies them from this folder.
//
//go:embed crds/*.yaml
var CRDs embed.FS

// BtpOperatorCRD is the file of the BtpOperator CRD, which every runtime
// serves (BTP Manager installs it there).
const BtpOperatorCRD = "operator.kyma-project.io_btpoperators.yaml"

// LoadCRDs decodes the embedded CRDs: the named files of crds/, or all of
// them when none is named. Each call returns fresh objects, so callers may
// hand them to installers that mutate them.
func LoadCRDs(files ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if len(files) == 0 {
		entries, err := fs.ReadDir(CRDs, "crds")
		if err != nil {
			return nil, fmt.Errorf("listing embedded CRDs: %w", err)
		}
		for _, e := range entries {
			files = append(files, e.Name())
		}
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		b, err := CRDs.ReadFile(path.Join("crds", f))
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", f, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD %s: %w", f, err)
		}
		out = append(out, crd)
	}
	return out, nil
}
