package kyma

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/resources"
)

// AllPlans in a component's disabledForPlans disables it for every plan.
const AllPlans = "*"

// ErrUnknownKymaVersion (wrapped) means no component list matches the Kyma version: neither an
// exact <version>.yaml nor a <major>.x.yaml in resources/components. Retrying cannot help.
var ErrUnknownKymaVersion = errors.New("no runtime component list for Kyma version")

// Component is one runtime component to install.
type Component struct {
	Name, Namespace string
}

// componentEntry is one item of a resources/components file; the file documents the fields.
type componentEntry struct {
	Name             string   `json:"name"`
	Namespace        string   `json:"namespace"`
	DisabledForPlans []string `json:"disabledForPlans,omitempty"`
	Optional         bool     `json:"optional,omitempty"`
}

type componentsFile struct {
	Components []componentEntry `json:"components"`
}

// Components returns the runtime components of a Kyma version for a plan, in installation order:
// the version's base list (resources/components/<version>.yaml, else <major>.x.yaml), without the
// components disabled for the plan or for all plans, and with the optional components (kiali,
// tracing) only when optional names them. Names in optional that the list does not define as
// optional are ignored: the catalog already restricts them, and a version that dropped one
// simply does not install it.
func Components(kymaVersion, planName string, optional []string) ([]Component, error) {
	return componentsFrom(embeddedLists, kymaVersion, planName, optional)
}

// embeddedLists are the component lists built into keb, each parsed once:
// they never change while keb runs, and every provisioning reads one.
var embeddedLists = func() fs.FS {
	dir, err := fs.Sub(resources.Kyma, resources.ComponentsDir)
	if err != nil {
		panic(fmt.Sprintf("opening embedded component lists: %v", err)) // a build without resources/components
	}
	return &parsedOnce{FS: dir}
}()

// parsedOnce is a folder of component lists that keeps each file's parsed
// entries (or its error) after the first read. Only files that exist are
// kept, so versions named by users cannot grow it.
type parsedOnce struct {
	fs.FS
	lists sync.Map // file name → parsedList
}

type parsedList struct {
	entries []componentEntry
	err     error
}

// componentsFrom is Components over any folder, so tests can give it their own files.
func componentsFrom(dir fs.FS, kymaVersion, planName string, optional []string) ([]Component, error) {
	entries, err := readComponentList(dir, kymaVersion)
	if err != nil {
		return nil, err
	}
	var out []Component
	for _, e := range entries {
		if slices.Contains(e.DisabledForPlans, AllPlans) || slices.Contains(e.DisabledForPlans, planName) {
			continue
		}
		if e.Optional && !slices.Contains(optional, e.Name) {
			continue
		}
		out = append(out, Component{Name: e.Name, Namespace: e.Namespace})
	}
	return out, nil
}

// readComponentList finds and checks the list for a version: the exact file wins over the major
// version's wildcard file.
func readComponentList(dir fs.FS, kymaVersion string) ([]componentEntry, error) {
	// A version is user input (on-demand kymaVersion): never let it name a path elsewhere.
	if kymaVersion == "" || strings.ContainsAny(kymaVersion, `/\`) || !fs.ValidPath(kymaVersion) {
		return nil, fmt.Errorf("%w %q: not a valid version", ErrUnknownKymaVersion, kymaVersion)
	}
	candidates := []string{kymaVersion + ".yaml"}
	if major, ok := majorVersion(kymaVersion); ok {
		candidates = append(candidates, major+".x.yaml")
	}
	cache, _ := dir.(*parsedOnce)
	for _, name := range candidates {
		if cache != nil {
			if l, ok := cache.lists.Load(name); ok {
				return l.(parsedList).entries, l.(parsedList).err
			}
		}
		b, err := fs.ReadFile(dir, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading component list %s: %w", name, err)
		}
		entries, err := parseComponentList(name, b)
		if cache != nil {
			cache.lists.Store(name, parsedList{entries, err})
		}
		return entries, err
	}
	return nil, fmt.Errorf("%w %q: looked for %s", ErrUnknownKymaVersion, kymaVersion, strings.Join(candidates, ", "))
}

// majorVersion returns "2" for "2.4.1", "v2.4.1" or "2"; false when the version does not start
// with a number (for example PR-123 builds, which need an exact file).
func majorVersion(v string) (string, bool) {
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if major == "" || strings.Trim(major, "0123456789") != "" {
		return "", false
	}
	return major, true
}

func parseComponentList(name string, b []byte) ([]componentEntry, error) {
	var f componentsFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("decoding component list %s: %w", name, err)
	}
	seen := map[string]bool{}
	for i, e := range f.Components {
		switch {
		case e.Name == "":
			return nil, fmt.Errorf("component list %s: component %d has no name", name, i)
		case e.Namespace == "":
			return nil, fmt.Errorf("component list %s: component %q has no namespace", name, e.Name)
		case seen[e.Name]:
			return nil, fmt.Errorf("component list %s: component %q listed twice", name, e.Name)
		}
		seen[e.Name] = true
	}
	return f.Components, nil
}
