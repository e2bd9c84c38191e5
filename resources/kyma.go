package resources

import "embed"

// Files inside Kyma, the embedded Kyma module and component lists read by internal/kyma.
const (
	// ModulesFile lists the default Kyma CR spec.modules.
	ModulesFile = "modules.yaml"
	// ComponentsDir holds one runtime component list per Kyma version (<version>.yaml) or major
	// version (<major>.x.yaml).
	ComponentsDir = "components"
)

// Kyma holds modules.yaml and components/*.yaml. It is separate from FS so that the Kyma lists
// ship with internal/kyma without touching the plans file's embedding.
//
//go:embed modules.yaml components/*.yaml
var Kyma embed.FS
