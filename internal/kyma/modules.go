package kyma

import (
	"fmt"
	"io/fs"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/resources"
)

// ModuleBTPOperator is the module that runs BTP Manager. The default list must contain it: the
// last provisioning step prepares the runtime for it.
const ModuleBTPOperator = "btp-operator"

// defaultModules is parsed once at start: the file is embedded, so a broken one is a build
// defect, and a panic at start (caught by the package's tests) beats a failing provisioning.
var defaultModules = mustLoadDefaultModules(resources.Kyma, resources.ModulesFile)

// DefaultModules returns a copy of the default spec.modules (resources/modules.yaml).
func DefaultModules() []Module { return copyModules(defaultModules) }

type modulesFile struct {
	Modules []Module `json:"modules"`
}

func mustLoadDefaultModules(fsys fs.FS, name string) []Module {
	m, err := loadDefaultModules(fsys, name)
	if err != nil {
		panic(err)
	}
	return m
}

// loadDefaultModules reads and checks a modules file: every module named once, a known
// customResourcePolicy, and btp-operator present.
func loadDefaultModules(fsys fs.FS, name string) ([]Module, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("reading default Kyma modules: %w", err)
	}
	var f modulesFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("decoding default Kyma modules %s: %w", name, err)
	}
	seen := map[string]bool{}
	for i, m := range f.Modules {
		switch {
		case m.Name == "":
			return nil, fmt.Errorf("default Kyma modules %s: module %d has no name", name, i)
		case seen[m.Name]:
			return nil, fmt.Errorf("default Kyma modules %s: module %q listed twice", name, m.Name)
		case !slices.Contains([]string{"", controlplane.CustomResourcePolicyCreateAndDelete, controlplane.CustomResourcePolicyIgnore}, m.CustomResourcePolicy):
			return nil, fmt.Errorf("default Kyma modules %s: module %q: unknown customResourcePolicy %q", name, m.Name, m.CustomResourcePolicy)
		}
		seen[m.Name] = true
	}
	if !seen[ModuleBTPOperator] {
		return nil, fmt.Errorf("default Kyma modules %s: %s is missing", name, ModuleBTPOperator)
	}
	return f.Modules, nil
}
