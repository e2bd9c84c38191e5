package edp

import (
	"encoding/base64"
	"strings"
)

// Metadata keys of a data tenant.
const (
	KeyEnvironment = "maasConsumerEnvironment"
	KeyRegion      = "maasConsumerRegion"
	KeySubAccount  = "maasConsumerSubAccount"
	KeyServicePlan = "maasConsumerServicePlan"
)

// Keys are the four metadata keys, in the order they are created.
var Keys = []string{KeyEnvironment, KeyRegion, KeySubAccount, KeyServicePlan}

// TenantName is a subaccount's data tenant name: its ID, lower-cased (EDP
// refuses upper case).
func TenantName(subaccountID string) string { return strings.ToLower(subaccountID) }

// DataTenant is the creation of a data tenant.
type DataTenant struct {
	Name        string `json:"name"`
	Environment string `json:"environment"`
	// Secret is a placeholder EDP requires: base64(name+environment).
	Secret string `json:"secret"`
}

// NewDataTenant is the creation of name's tenant in env.
func NewDataTenant(name, env string) DataTenant {
	return DataTenant{Name: name, Environment: env, Secret: base64.StdEncoding.EncodeToString([]byte(name + env))}
}

// MetadataItem is one metadata entry.
type MetadataItem struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Metadata are the four entries of a runtime's subaccount, in Keys' order.
func Metadata(subaccountID, platformRegion, planName string) []MetadataItem {
	return []MetadataItem{
		{Key: KeyEnvironment, Value: consumerEnvironment(platformRegion)},
		{Key: KeyRegion, Value: platformRegion},
		{Key: KeySubAccount, Value: TenantName(subaccountID)},
		{Key: KeyServicePlan, Value: ServicePlan(planName)},
	}
}

// consumerEnvironment maps the platform region's prefix: cf-eu10 → CF.
func consumerEnvironment(region string) string {
	prefix, _, _ := strings.Cut(region, "-")
	switch prefix {
	case "k8s":
		return "KUBERNETES"
	case "neo":
		return "NEO"
	}
	return "CF"
}

// ServicePlan is a plan's maasConsumerServicePlan.
func ServicePlan(plan string) string {
	switch plan {
	case "free":
		return "free"
	case "azure_lite":
		return "tdd"
	case "build-runtime-aws", "build-runtime-gcp", "build-runtime-azure", "preview":
		return "build-runtime"
	}
	return "standard"
}

// Record is what keb registered in EDP for a runtime's subaccount, kept in
// the provisioning operation's record (JSON key "edp").
type Record struct {
	// Tenant and Environment name the data tenant.
	Tenant      string `json:"tenant"`
	Environment string `json:"environment"`
	// Created is set once the tenant and its metadata exist.
	Created bool `json:"created"`
}
