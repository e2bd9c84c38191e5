package catalog

import (
	"fmt"
	"slices"
)

// Resolved is a provision request with the plan's defaults applied: everything provisioning
// needs to know about where and how big the runtime is.
type Resolved struct {
	Plan     Plan
	Provider string
	// Region is the region as the user sees it (for trial: europe, us or asia).
	Region string
	// ProviderRegion is the hyperscaler region the cluster runs in (for trial: the provider's
	// region behind the trial region; for others: Region).
	ProviderRegion string
	MachineType    string
	AutoScalerMin  int
	AutoScalerMax  int
	NodeCount      int
	ZonesCount     int
	// Parameters are the validated parameters as given, without defaults.
	Parameters ProvisioningParameters
}

// Resolve applies the plan's defaults to validated parameters for a request from platformRegion.
// The region defaults to the plan's (trial: the platform region's trial region; free: the
// provider's default); the machine type, autoscaler, node and zone counts to the plan's.
func (c *Catalog) Resolve(planID, platformRegion string, p ProvisioningParameters) (Resolved, error) {
	e, err := c.entryFor(planID, platformRegion)
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve parameters: %w", err)
	}
	plan := e.plan
	provider := e.providerFor(platformRegion)
	if tp := TrialProvider(p.Provider); plan.Trial && tp != "" {
		provider = tp
	}
	offer := e.offers[provider]
	r := Resolved{
		Plan:       plan.clone(),
		Provider:   provider,
		Parameters: p,
	}

	r.Region = c.regionFor(e, provider, p)
	if plan.Trial {
		r.Region = c.trialArea(platformRegion, p.Region, provider)
	}
	r.ProviderRegion = r.Region
	switch {
	case plan.Trial:
		hs, ok := c.providerTrialRegions[provider][r.Region]
		if !ok {
			return Resolved{}, fmt.Errorf("resolve parameters: trial region %q has no %s region in plans file %s", r.Region, provider, c.source)
		}
		r.ProviderRegion = hs
		if forced := c.trialForcedRegion(provider, platformRegion); forced != "" {
			r.ProviderRegion = forced
		}
	case plan.ForcedRegions[provider] != "":
		// Upstream's free runtimes on AWS run in eu-central-1 whatever region was asked for.
		r.ProviderRegion = plan.ForcedRegions[provider]
	}

	if !plan.BasicForm {
		r.MachineType = deref(p.MachineType)
	}
	switch {
	case r.MachineType != "":
	case c.smaller && plan.SmallerMachineTypes[provider] != "":
		r.MachineType = plan.SmallerMachineTypes[provider]
	case plan.DefaultMachineTypes[provider] != "":
		r.MachineType = plan.DefaultMachineTypes[provider]
	case plan.Trial && provider != plan.Provider:
		// A trial on another provider than the plan's gets that provider's default machine.
		r.MachineType = c.providerDefaults[provider].machineType
	default:
		r.MachineType = plan.DefaultMachineType
	}
	if r.MachineType == "" && len(offer.machineTypes) > 0 {
		r.MachineType = c.providerDefaultMachineType(provider, offer)
	}
	r.AutoScalerMin, _ = valueOr(p.AutoScalerMin, plan.DefaultAutoScalerMin)
	r.AutoScalerMax, _ = valueOr(p.AutoScalerMax, plan.DefaultAutoScalerMax)
	r.NodeCount, _ = valueOr(p.NodeCount, plan.DefaultNodeCount)
	r.ZonesCount, _ = valueOr(p.ZonesCount, plan.DefaultZonesCount)
	if len(p.Zones) > 0 {
		r.ZonesCount = len(p.Zones)
	}
	return r, nil
}

// trialArea is a trial's region (europe, us, asia) as upstream chooses it: the one its
// platform region maps to (trialRegions.regions[].platformRegions), else the region parameter,
// else the provider's trialDefaultRegion (upstream: Azure eastus, AWS eu-west-1, GCP
// europe-west3, i.e. us, europe, europe).
func (c *Catalog) trialArea(platformRegion string, param *string, provider string) string {
	if area, ok := c.trialByPlatform[platformRegion]; ok {
		return area
	}
	if param != nil && *param != "" {
		return *param
	}
	return c.providerDefaults[provider].trialRegion
}

// trialForcedRegion is where a trial on provider runs in platformRegion whatever its area:
// the provider's euAccessRegion in an EU access platform region (Azure switzerlandnorth, AWS
// eu-central-1; GCP has none), else the provider's first region there (providers.*.platformRegions:
// GCP me-central2 on the KSA platform region cf-sa30); "" when neither.
func (c *Catalog) trialForcedRegion(provider, platformRegion string) string {
	if r := c.providerDefaults[provider].euAccessRegion; r != "" && slices.Contains(c.euAccess, platformRegion) {
		return r
	}
	return c.forcedRegions[provider][platformRegion]
}

// regionFor is the region of a non-trial runtime: the parameter, else the plan's default, else
// the provider's.
func (c *Catalog) regionFor(e *planEntry, provider string, p ProvisioningParameters) string {
	switch {
	case p.Region != nil:
		return *p.Region
	case e.plan.DefaultRegion != "":
		return e.plan.DefaultRegion
	default:
		return c.providerDefaultRegion(provider, e.offers[provider])
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// providerDefaultRegion is the provider's default region if the plan offers it, else the plan's
// first region for that provider.
func (c *Catalog) providerDefaultRegion(provider string, o offer) string {
	if d := c.providerDefaults[provider].region; hasOption(o.regions, d) {
		return d
	}
	if len(o.regions) > 0 {
		return o.regions[0].Code
	}
	return ""
}

func (c *Catalog) providerDefaultMachineType(provider string, o offer) string {
	if d := c.providerDefaults[provider].machineType; hasOption(o.machineTypes, d) {
		return d
	}
	return o.machineTypes[0].Code
}
