package catalog

import (
	"strings"
	"testing"
)

// TestConcreteMachineType: the embedded plans file resolves version-agnostic AWS names as
// upstream's providers data does (mi.* → m7i.*, ri.* → r8i.*); other names, and names the
// templates match only in part, are written as they are.
func TestConcreteMachineType(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, tc := range []struct{ provider, in, want string }{
		{ProviderAWS, "mi.large", "m7i.large"},
		{ProviderAWS, "mi.2xlarge", "m7i.2xlarge"},
		{ProviderAWS, "ri.16xlarge", "r8i.16xlarge"},
		{ProviderAWS, "m6i.large", "m6i.large"},
		{ProviderAWS, "mi.large.metal", "mi.large.metal"},
		{ProviderAWS, "xmi.large", "xmi.large"},
		{ProviderAzure, "mi.large", "mi.large"},
		{ProviderAzure, "Standard_D2s_v5", "Standard_D2s_v5"},
	} {
		if got := c.ConcreteMachineType(tc.provider, tc.in); got != tc.want {
			t.Errorf("ConcreteMachineType(%s, %s) = %s, want %s", tc.provider, tc.in, got, tc.want)
		}
	}
}

// TestMachineVersionsOrder: the most specific template wins (fewer placeholders, then more
// literal characters), whatever the order of the file.
func TestMachineVersionsOrder(t *testing.T) {
	t.Parallel()
	versions, err := parseMachineVersions(map[string]string{
		"{family}.{size}":              "generic-{family}-{size}",
		"Standard_NC{size}as_T4":       "Standard_NC{size}as_T4_v3",
		"Standard_{x}":                 "short-{x}",
		"Standard_NC4as_T4":            "exact",
		"Standard_NC{size}as_{gpu}_v4": "two-{size}-{gpu}",
	})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"Standard_NC4as_T4":    "exact",
		"Standard_NC8as_T4":    "Standard_NC8as_T4_v3",
		"Standard_D2s":         "short-D2s",
		"Standard_NC8as_A1_v4": "two-8-A1",
		"mi.large":             "generic-mi-large",
	} {
		if got, ok := resolveMachineVersion(versions, in); !ok || got != want {
			t.Errorf("%s → %s (%v), want %s", in, got, ok, want)
		}
	}
	if got, ok := resolveMachineVersion(versions, "Standard_D2s_v5"); ok {
		t.Errorf("Standard_D2s_v5 → %s: a placeholder matches letters and digits only", got)
	}
}

// TestMachineVersionsMistakes: a template the plans file gets wrong stops the start-up, naming it.
func TestMachineVersionsMistakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ templates, want string }{
		{`{"mi.{size}": "m7i.{sizes}"}`, `placeholder {sizes} is not in the input`},
		{`{"mi.{size}.{size}": "m7i.{size}"}`, `placeholder {size} is used twice`},
		{`{"mi.{size": "m7i"}`, `a brace outside a {placeholder}`},
		{`{"mi.{size}": ""}`, `neither template may be empty`},
	} {
		file := strings.Replace(minimalPlansFile, "    machineTypes:\n", "    machinesVersions: "+tc.templates+"\n    machineTypes:\n", 1)
		_, err := Load(writeFile(t, file))
		if err == nil || !strings.Contains(err.Error(), "providers.azure.machinesVersions: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming providers.azure.machinesVersions and %q", tc.templates, err, tc.want)
		}
	}
}
