package catalog

import "fmt"

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

	if plan.Trial && p.Region == nil {
		r.Region = c.TrialRegion(platformRegion)
	} else {
		r.Region = c.regionFor(e, provider, p)
	}
	r.ProviderRegion = r.Region
	if plan.Trial {
		hs, ok := c.providerTrialRegions[provider][r.Region]
		if !ok {
			return Resolved{}, fmt.Errorf("resolve parameters: trial region %q has no %s region in plans file %s", r.Region, provider, c.source)
		}
		r.ProviderRegion = hs
		if forced, ok := c.forcedRegions[provider][platformRegion]; ok {
			// EU access and KSA platform regions keep trials in their one region.
			r.ProviderRegion = forced
		}
	}

	r.MachineType = firstNonEmpty(deref(p.MachineType), plan.DefaultMachineType)
	if plan.Trial && provider != plan.Provider {
		// A trial on another provider than the plan's gets that provider's default machine.
		r.MachineType = c.providerDefaults[provider].machineType
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
