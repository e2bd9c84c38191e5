package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
)

// LoadOption changes how Load builds the catalog.
type LoadOption func(*Catalog)

// IgnoreUnsupportedParameters builds schemas that accept parameters they do not name (no
// "additionalProperties": false), as upstream KEB does unless told to reject them; callers learn
// of them with UnsupportedParameters.
func IgnoreUnsupportedParameters() LoadOption {
	return func(c *Catalog) { c.lenient = true }
}

// SmallerMachineTypes gives trial and free runtimes the plans' smallerMachineTypes (AWS
// mi.large, Azure Standard_D2s_v5) instead of their defaultMachineTypes, as upstream's
// useSmallerMachineTypes does.
func SmallerMachineTypes() LoadOption {
	return func(c *Catalog) { c.smaller = true }
}

// DefaultDualStackDocsURL is the page networking.dualStack's description links to unless
// DualStackDocsURL names another (upstream's broker.dualStackDocsURL: a help.sap.com page).
const DefaultDualStackDocsURL = "https://help.sap.com/docs/btp/sap-business-technology-platform/kyma-environment"

// DualStackDocsURL makes networking.dualStack's description link to url (upstream's
// broker.dualStackDocsURL); "" keeps DefaultDualStackDocsURL.
func DualStackDocsURL(url string) LoadOption {
	return func(c *Catalog) {
		if url != "" {
			c.dualStackDocsURL = url
		}
	}
}

// schemaDoc is a built schema as the catalog serves it: without "additionalProperties": false
// when unsupported parameters are ignored, without gvisor unless OfferGVisor.
func (c *Catalog) schemaDoc(doc map[string]any) map[string]any {
	if !c.gvisorOffered {
		dropGVisor(doc)
	}
	if c.lenient {
		dropClosedObjects(doc)
	}
	return doc
}

func dropClosedObjects(v any) {
	switch t := v.(type) {
	case map[string]any:
		if t["additionalProperties"] == false {
			delete(t, "additionalProperties")
		}
		for k, x := range t {
			if k != "oneOf" {
				dropClosedObjects(x)
				continue
			}
			// The alternatives of a oneOf tell each other apart by the keys they allow: each
			// stays closed, what lies inside it does not.
			branches, _ := x.([]any)
			for _, b := range branches {
				if bm, ok := b.(map[string]any); ok {
					for bk, bx := range bm {
						if bk != "additionalProperties" {
							dropClosedObjects(bx)
						}
					}
				}
			}
		}
	case []any:
		for _, x := range t {
			dropClosedObjects(x)
		}
	}
}

// UnsupportedParameters names the parameters of raw (dotted paths) that the plan's create schema
// in the platform region does not name, sorted; nil when the catalog rejects them anyway or raw
// is not an object.
func (c *Catalog) UnsupportedParameters(planID, platformRegion string, raw json.RawMessage) []string {
	if !c.lenient {
		return nil
	}
	e, err := c.entryFor(planID, platformRegion)
	if err != nil {
		return nil
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil
	}
	var out []string
	shown, _ := e.splitHidden(doc)
	shown, _ = c.withoutSchemalessGVisor(e.plan, shown)
	unknownKeys(shown, e.create.doc, "", &out)
	sort.Strings(out)
	return out
}

// unknownKeys collects the keys of doc that schema's properties do not name, recursing into the
// properties and items it does name (for a oneOf, the properties of every alternative).
func unknownKeys(doc any, schema map[string]any, path string, out *[]string) {
	switch d := doc.(type) {
	case map[string]any:
		props, ok := schema["properties"].(map[string]any)
		if branches, alt := schema["oneOf"].([]any); alt {
			// The keys of any alternative are known (oidc's list and single-provider fields).
			union := map[string]any{}
			for k, v := range props {
				union[k] = v
			}
			for _, b := range branches {
				bp, _ := b.(map[string]any)["properties"].(map[string]any)
				for k, v := range bp {
					if _, seen := union[k]; !seen {
						union[k] = v
					}
				}
			}
			props, ok = union, true
		}
		if !ok {
			return
		}
		for k, v := range d {
			sub, named := props[k].(map[string]any)
			if !named {
				*out = append(*out, joinField(path, k))
				continue
			}
			unknownKeys(v, sub, joinField(path, k), out)
		}
	case []any:
		items, ok := schema["items"].(map[string]any)
		if !ok {
			return
		}
		for i, v := range d {
			unknownKeys(v, items, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}
