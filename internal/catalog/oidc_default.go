package catalog

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/resources"
)

// DefaultOIDCFile makes Load read the default OIDC provider from path instead of the embedded
// resources/oidc.yaml ("" keeps the embedded one).
func DefaultOIDCFile(path string) LoadOption {
	return func(c *Catalog) { c.oidcFile = path }
}

// DefaultOIDC is the default OIDC provider of runtimes' API servers (resources/oidc.yaml or
// the file DefaultOIDCFile named).
func (c *Catalog) DefaultOIDC() OIDCProvider {
	d := c.defaultOIDC
	d.SigningAlgs = append([]string(nil), d.SigningAlgs...)
	d.RequiredClaims = append([]string(nil), d.RequiredClaims...)
	return d
}

// loadDefaultOIDC reads and checks the default OIDC provider: complete (clientID, issuerURL)
// and valid as an oidc parameter would have to be.
func loadDefaultOIDC(path string) (OIDCProvider, error) {
	source, data, err := "embedded resources/"+resources.OIDCDefaultFile, []byte(nil), error(nil)
	if path == "" {
		data, err = resources.FS.ReadFile(resources.OIDCDefaultFile)
	} else {
		source = path
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return OIDCProvider{}, fmt.Errorf("read default OIDC file %s: %w", source, err)
	}
	var p OIDCProvider
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return OIDCProvider{}, fmt.Errorf("default OIDC file %s: %w", source, err)
	}
	if problems := oidcProblems(&OIDC{OIDCProvider: p}); len(problems) > 0 {
		return OIDCProvider{}, fmt.Errorf("default OIDC file %s: %w", source, newValidationError(subjectParameters, problems))
	}
	return p, nil
}
