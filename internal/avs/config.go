// Package avs is keb's client of SAP's Availability Service (AVS): the
// evaluations (monitors) that watch each runtime from inside the landscape
// (internal) and from outside (external), under a configured parent
// evaluation. The wire contract is upstream KEB's, as it last had it
// (1.10.7, ../shared/reference/integrations.md §3).
package avs

// Config is the APP_AVS_* settings group. The integration is off unless
// APIEndpoint is set.
type Config struct {
	// OAuth2 resource-owner password grant: a fresh token for every call.
	OAuthTokenEndpoint string
	OAuthUsername      string
	OAuthPassword      string
	// OAuthClientID authenticates the token request (HTTP Basic, empty secret).
	OAuthClientID string
	// APIEndpoint is the evaluation API's base URL; item URLs are <base>/<id>.
	APIEndpoint string
	// Disabled turns off both provisioning steps; deprovisioning still
	// removes what earlier provisionings created (as upstream).
	Disabled bool
	// ExternalTesterDisabled makes the external evaluation step a no-op.
	ExternalTesterDisabled bool
	// Tester access, group and parent IDs of the evaluations.
	InternalTesterAccessID, ExternalTesterAccessID int64
	GroupID, ParentID                              int64
	// Service overrides an evaluation's "service" (default: its name).
	InternalTesterService, ExternalTesterService string
	// The trial and free plans' internal evaluation uses these when all
	// three are set.
	TrialInternalTesterAccessID, TrialGroupID, TrialParentID int64
	// TagClasses are the tag class IDs of the evaluations' tags.
	TagClasses TagClasses
	// MaintenanceDuringUpgradeDisabled leaves the evaluations alone during
	// cluster upgrades; MaintenanceExemptionsFile names global accounts
	// whose runtimes are never put into maintenance (MaintenanceExemptions).
	MaintenanceDuringUpgradeDisabled bool
	MaintenanceExemptionsFile        string
}

// TagClasses are the tag class IDs of an evaluation's seven tags.
type TagClasses struct {
	InstanceID, GlobalAccountID, SubAccountID, Landscape, Provider, Region, ShootName int64
}

// Configured reports whether keb talks to AVS at all: then deprovisioning
// removes evaluations, whatever Disabled says.
func (c Config) Configured() bool { return c.APIEndpoint != "" }

// Provisions reports whether provisioning creates evaluations.
func (c Config) Provisions() bool { return c.Configured() && !c.Disabled }

// Maintains reports whether cluster upgrades put evaluations into
// maintenance.
func (c Config) Maintains() bool { return c.Configured() && !c.MaintenanceDuringUpgradeDisabled }

// trialTester reports whether the trial tester, group and parent are set.
func (c Config) trialTester() bool {
	return c.TrialInternalTesterAccessID != 0 && c.TrialGroupID != 0 && c.TrialParentID != 0
}
