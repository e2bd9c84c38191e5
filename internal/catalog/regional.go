package catalog

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/pivotal-cf/brokerapi/v10/domain"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ErrPlanNotOffered is wrapped by errors about a plan the request's platform region does not
// offer (no hyperscaler region of the plan there).
var ErrPlanNotOffered = errors.New("plan not offered in this platform region")

// otherPlatformRegions keys the variant of every platform region the plans file does not name.
const otherPlatformRegions = ""

// buildRegional prepares, once, each platform region's variant of every plan: the hyperscaler
// regions the plan (plans.*.platformRegions) or else its providers (providers.*.platformRegions)
// offer there, else their default lists, or
// none for a provider offered only in the platform regions it names (platformRegionsOnly). A
// plan with no region in a platform region is not offered there (nil). A variant that differs
// from the plan's default entry is compiled on its own; one that does not shares it.
func (c *Catalog) buildRegional(f *plansFile) error {
	c.regional = map[string]map[string]*planEntry{}
	prs := []string{otherPlatformRegions}
	seen := map[string]bool{}
	named := func(m map[string][]string) {
		for _, pr := range sortedKeys(m) {
			if !seen[pr] {
				seen[pr] = true
				prs = append(prs, pr)
			}
		}
	}
	for _, p := range sortedKeys(f.Providers) {
		named(f.Providers[p].PlatformRegions)
	}
	for _, p := range sortedKeys(f.Plans) {
		named(f.Plans[p].PlatformRegions)
	}
	compiler := newSchemaCompiler()
	for _, pr := range prs {
		variant := map[string]*planEntry{}
		for _, id := range sortedKeys(c.plans) {
			e, err := c.variant(compiler, f, c.plans[id], pr)
			if err != nil {
				return err
			}
			variant[id] = e
		}
		c.regional[pr] = variant
	}
	// The platform regions the plans file does not name: a plan whose provider follows the
	// platform region offers that one provider's regions there, as upstream's free plan does
	// (never a union of providers' regions), so each provider class gets its own variant.
	c.otherRegions = map[string]map[string]*planEntry{}
	byProvider := map[string]*planEntry{} // plan ID@provider: classes of one provider share it
	for _, class := range OtherRegionClasses() {
		variant := map[string]*planEntry{}
		for _, id := range sortedKeys(c.plans) {
			e := c.plans[id]
			if !e.plan.ByPlatformRegion() {
				variant[id] = c.regional[otherPlatformRegions][id]
				continue
			}
			key := id + "@" + e.providerForClass(class)
			v, built := byProvider[key]
			if !built {
				var err error
				if v, err = c.variantOf(compiler, f, e, otherPlatformRegions, e.providerForClass(class)); err != nil {
					return err
				}
				byProvider[key] = v
			}
			variant[id] = v
		}
		c.otherRegions[class] = variant
	}
	return nil
}

// OtherRegionClasses are the classes of the platform regions the plans file does not name: the
// provider each one's digit names (see ProviderForPlatformRegion), and "" for none.
func OtherRegionClasses() []string {
	return []string{"", ProviderOpenStack, ProviderAWS, ProviderAzure, ProviderGCP, ProviderAlicloud}
}

// OtherRegionClass is the class (OtherRegionClasses) of a platform region.
func OtherRegionClass(platformRegion string) string {
	p, err := ProviderForPlatformRegion(platformRegion)
	if err != nil {
		return ""
	}
	return p
}

// providerForClass is the provider of a plan whose provider follows the platform region, in a
// platform region of the class: the class's provider if the plan runs there, else its first.
func (e *planEntry) providerForClass(class string) string {
	if slices.Contains(e.plan.Providers, class) {
		return class
	}
	return e.plan.Providers[0]
}

// variant is e as offered in platform region pr (otherPlatformRegions: any region not named).
func (c *Catalog) variant(compiler *jsonschema.Compiler, f *plansFile, e *planEntry, pr string) (*planEntry, error) {
	return c.variantOf(compiler, f, e, pr, "")
}

// variantOf is variant; only, if not "", is the provider of a plan whose provider follows the
// platform region.
func (c *Catalog) variantOf(compiler *jsonschema.Compiler, f *plansFile, e *planEntry, pr, only string) (*planEntry, error) {
	providers := []string{e.plan.Provider}
	if e.plan.ByPlatformRegion() {
		providers = e.plan.Providers
		switch {
		case only != "":
			providers = []string{only}
		case pr != otherPlatformRegions:
			// The platform region decides the provider: offer only its regions.
			providers = []string{e.providerFor(pr)}
		}
	}
	offers := map[string]offer{}
	changed := len(providers) != len(e.offers)
	for _, prov := range providers {
		o := e.offers[prov]
		spec := f.Providers[prov]
		if list, ok := f.Plans[e.plan.Name].PlatformRegions[pr]; ok && pr != otherPlatformRegions {
			// The plan's own list for the platform region wins over its provider's.
			o.regions = keep(o.regions, list)
			changed = true
		} else if list, ok := spec.PlatformRegions[pr]; ok && pr != otherPlatformRegions {
			o.regions = keep(o.regions, list)
			changed = true
		} else if spec.PlatformRegionsOnly {
			o.regions = nil
			changed = true
		} else if rest := withoutPlatformRegionsOnly(o.regions, spec.Regions); len(rest) != len(o.regions) {
			// The plan's default entry offers every region (an instance keeps its region on
			// update); a platform region not naming these does not offer them.
			o.regions = rest
			changed = true
		}
		if len(o.regions) > 0 {
			offers[prov] = o
		}
	}
	switch {
	case e.plan.Trial:
		// Trial regions are coarse (europe, us, asia): the schema does not change, the hyperscaler
		// region is forced where the provider names one (see Resolve).
		return e, nil
	case !changed:
		return e, nil
	case len(offers) == 0:
		return nil, nil
	}
	v := &planEntry{plan: e.plan.clone(), offers: offers}
	if !e.plan.ByPlatformRegion() && !hasOption(offers[e.plan.Provider].regions, v.plan.DefaultRegion) {
		v.plan.DefaultRegion = offers[e.plan.Provider].regions[0].Code
	}
	name := e.plan.Name + "@" + pr
	if only != "" {
		name += "@" + only
	}
	if err := v.compile(compiler, name, c.schemaDoc(c.createSchema(v)), c.schemaDoc(updateSchema(v)), c.hiddenSchema(v)); err != nil {
		return nil, fmt.Errorf("plan %s in platform region %s: %w", e.plan.Name, pr, err)
	}
	return v, nil
}

// withoutPlatformRegionsOnly is opts without the regions specs marks platformRegionsOnly.
func withoutPlatformRegionsOnly(opts []Option, specs []optionSpec) []Option {
	var out []Option
	for _, o := range opts {
		if !slices.ContainsFunc(specs, func(s optionSpec) bool { return s.Code == o.Code && s.PlatformRegionsOnly }) {
			out = append(out, o)
		}
	}
	return out
}

// keep returns the options whose codes are listed, in the list's order.
func keep(opts []Option, codes []string) []Option {
	var out []Option
	for _, code := range codes {
		for _, o := range opts {
			if o.Code == code {
				out = append(out, o)
			}
		}
	}
	return out
}

// entryFor is the plan as platform region pr offers it; an error wraps ErrUnknownPlan or
// ErrPlanNotOffered.
func (c *Catalog) entryFor(planID, pr string) (*planEntry, error) {
	base, ok := c.plans[planID]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownPlan, planID)
	}
	if pr == "" {
		pr = DefaultPlatformRegion
	}
	variant, named := c.regional[pr]
	if !named {
		variant = c.otherRegions[OtherRegionClass(pr)]
	}
	e := variant[planID]
	if e == nil {
		return nil, fmt.Errorf("%w: plan %s has no region in platform region %s (offered in: %s)",
			ErrPlanNotOffered, base.plan.Name, pr, c.offeredIn(planID))
	}
	return e, nil
}

// offeredIn names the platform regions the plans file names that offer a plan.
func (c *Catalog) offeredIn(planID string) string {
	var prs []string
	for pr, v := range c.regional {
		if pr != otherPlatformRegions && v[planID] != nil {
			prs = append(prs, pr)
		}
	}
	sort.Strings(prs)
	if len(prs) == 0 {
		return "none"
	}
	return fmt.Sprint(prs)
}

// CatalogRegions are the platform regions whose catalog the plans file makes differ from the
// others', sorted.
func (c *Catalog) CatalogRegions() []string {
	var prs []string
	for pr := range c.regional {
		if pr != otherPlatformRegions {
			prs = append(prs, pr)
		}
	}
	slices.Sort(prs)
	return prs
}

// ServicesFor is Services as platform region pr ("": DefaultPlatformRegion) offers them:
// enabled plans without a region there are left out, and a region offering none of them gets
// no service.
func (c *Catalog) ServicesFor(pr string, enabledPlans []string) ([]domain.Service, error) {
	if pr == "" {
		pr = DefaultPlatformRegion
	}
	variant, named := c.regional[pr]
	if !named {
		variant = c.otherRegions[OtherRegionClass(pr)]
	}
	return c.services(enabledPlans, func(e *planEntry) *planEntry { return variant[e.plan.ID] }, true)
}

// ServicesForOtherRegions is ServicesFor of every platform region the plans file does not name
// of a class (OtherRegionClasses).
func (c *Catalog) ServicesForOtherRegions(class string, enabledPlans []string) ([]domain.Service, error) {
	variant := c.otherRegions[class]
	return c.services(enabledPlans, func(e *planEntry) *planEntry { return variant[e.plan.ID] }, true)
}
