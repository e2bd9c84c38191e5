package hyperscaler

import (
	"fmt"
	"strings"
)

// Values of the hyperscaler-type label. They are a wire contract with whoever fills the pool: a
// Secret labelled with any other value is never handed out.
const (
	TypeAzure     = "azure"
	TypeAWS       = "aws"
	TypeGCP       = "gcp"
	TypeOpenStack = "openstack"
	TypeAliCloud  = "alicloud"
	TypeGDCH      = "gdch"
)

// providerTypes maps a provider name (as the catalog spells it) to its hyperscaler-type label value.
// Today they coincide; the map keeps the label contract independent of how plans name providers.
var providerTypes = map[string]string{
	"azure":     TypeAzure,
	"aws":       TypeAWS,
	"gcp":       TypeGCP,
	"openstack": TypeOpenStack,
	"alicloud":  TypeAliCloud,
	"gdch":      TypeGDCH,
}

// HyperscalerType returns the hyperscalerType label value of the pool serving provider ("azure",
// "aws", "gcp", "openstack", and upstream's "alicloud" and "gdch", case-insensitive). Any other provider is an error, so a typo in a
// plan fails the operation instead of searching an empty pool forever.
func HyperscalerType(provider string) (string, error) {
	t, ok := providerTypes[strings.ToLower(strings.TrimSpace(provider))]
	if !ok {
		return "", fmt.Errorf("no hyperscaler account pool for provider %q", provider)
	}
	return t, nil
}
