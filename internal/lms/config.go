// Package lms is keb's client of the Log Management Service (LMS): one
// Elasticsearch/Kibana tenant per global account and LMS region, and for
// each runtime a client certificate of that tenant, with which the
// runtime's Fluent Bit forwards its logs over TLS. The wire contract is
// upstream KEB's, as it last had it (2021-04,
// ../shared/reference/integrations.md §4).
package lms

import (
	"slices"
	"strings"
)

// Cluster types of a tenant (APP_LMS_CLUSTER_TYPE).
const (
	ClusterTypeHA         = "ha"
	ClusterTypeSingleNode = "single-node"
)

// Config is the APP_LMS_* settings group. The integration is off unless URL
// is set.
type Config struct {
	// URL is the base URL of LMS's API.
	URL string
	// Token is the X-LMS-Token header's value.
	Token string
	// ClusterType is each new tenant's clusterType: ha or single-node.
	ClusterType string
	// Environment and SAMLTenant go into each new tenant.
	Environment string
	SAMLTenant  string
	// Region overrides the mapping of the runtime's region to an LMS
	// region (eu, us, aus) when set.
	Region string
	// Mandatory makes LMS's failures fail the provisioning (upstream's
	// default); otherwise a refusal or a tenant that never gets ready is
	// skipped with a recorded warning, as the seed documents the steps.
	Mandatory bool
	// EnabledForGlobalAccounts is "all", "none" (or empty), or a comma
	// list of the global accounts whose runtimes get LMS.
	EnabledForGlobalAccounts string
}

// Enabled reports whether keb sets up LMS at all.
func (c Config) Enabled() bool {
	ga := strings.TrimSpace(c.EnabledForGlobalAccounts)
	return c.URL != "" && ga != "" && ga != "none"
}

// For reports whether a runtime of globalAccountID on plan gets LMS: the
// account is enabled (case aside), and the plan is not trial, which never
// does.
func (c Config) For(globalAccountID, plan string) bool {
	if !c.Enabled() || plan == "trial" {
		return false
	}
	ga := strings.TrimSpace(c.EnabledForGlobalAccounts)
	if ga == "all" {
		return true
	}
	return slices.ContainsFunc(strings.Split(ga, ","), func(s string) bool {
		return strings.EqualFold(strings.TrimSpace(s), globalAccountID)
	})
}
