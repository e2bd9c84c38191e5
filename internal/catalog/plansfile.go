package catalog

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The plans file format (resources/plans.yaml). Field names are what operators edit, so they
// favour readability; the file's own comments document them.

const (
	formFull  = "full"
	formBasic = "basic"
	// byPlatformRegion as a plan's provider means "decided per request by the platform region".
	byPlatformRegion = "byPlatformRegion"
)

type plansFile struct {
	Providers    map[string]providerSpec `json:"providers"`
	TrialRegions trialRegionsSpec        `json:"trialRegions"`
	Plans        map[string]planSpec     `json:"plans"`
}

type providerSpec struct {
	DisplayName        string            `json:"displayName"`
	DefaultRegion      string            `json:"defaultRegion"`
	DefaultMachineType string            `json:"defaultMachineType"`
	Regions            []optionSpec      `json:"regions"`
	MachineTypes       []optionSpec      `json:"machineTypes"`
	TrialRegions       map[string]string `json:"trialRegions,omitempty"`
	// AdditionalMachineTypes are machine families offered only to additional worker pools
	// (compute-optimised, GPU).
	AdditionalMachineTypes []optionSpec `json:"additionalMachineTypes,omitempty"`
	// SeedRegions was keb's own list of the regions with a Gardener seed. They are read from the
	// control plane now, as upstream reads them (internal/seeds); a plans file still naming them
	// is refused with where they went, rather than followed.
	SeedRegions []string `json:"seedRegions,omitempty"`
	// PlatformRegions narrows the regions offered in the platform regions it names (EU access,
	// KSA); a trial on this provider there runs in the first one. PlatformRegionsOnly offers the
	// provider's plans in those platform regions only.
	PlatformRegions     map[string][]string `json:"platformRegions,omitempty"`
	PlatformRegionsOnly bool                `json:"platformRegionsOnly,omitempty"`
	// MachineImage, when set, is the worker nodes' OS image on this
	// provider (the Runtime CR's machine.image), over the machine image
	// settings every provider's nodes get otherwise.
	MachineImage *machineImageSpec `json:"machineImage,omitempty"`
	// MachinesVersions resolve version-agnostic machine names to the machine type the Runtime CR
	// names, as upstream's providers data does: an input template (mi.{size}) to an output
	// template (m7i.{size}); see machineVersions.
	MachinesVersions map[string]string `json:"machinesVersions,omitempty"`
	// VolumeType is the worker nodes' disk type (the Runtime CR's volume.type); "" writes none.
	VolumeType string `json:"volumeType,omitempty"`
	// TrialDefaultRegion is the trial region (europe, us, asia) of a trial on this provider that
	// neither its platform region nor its region parameter places (upstream: Azure eastus,
	// AWS eu-west-1, GCP europe-west3); "" is trialRegions.default.
	TrialDefaultRegion string `json:"trialDefaultRegion,omitempty"`
	// EUAccessRegion is where a trial on this provider runs in an EU access platform region
	// (trialRegions.euAccessPlatformRegions); "" leaves EU access trials unplaced by it (GCP).
	EUAccessRegion string `json:"euAccessRegion,omitempty"`
	// DualStack offers networking.dualStack (IPv4 and IPv6) on this provider's plans, as
	// upstream's providers data does for AWS alone.
	DualStack bool `json:"dualStack,omitempty"`
}

type machineImageSpec struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type optionSpec struct {
	Code        string `json:"code"`
	DisplayName string `json:"displayName"`
	// ResolvesTo, for a version-agnostic machine type (mi.large), is the concrete machine type
	// written into the Runtime CR.
	ResolvesTo string `json:"resolvesTo,omitempty"`
	// Zones, for a region, are its availability zones (suffixes, as in resources/zones.yaml),
	// for a replacement plans file's region that resources/zones.yaml does not list, or lists
	// otherwise than the operator's landscape has them.
	Zones []string `json:"zones,omitempty"`
	// PlatformRegionsOnly, for a region, offers it only in the platform regions whose
	// platformRegions name it (Azure's switzerlandnorth: EU access on cf-ch20 alone, as upstream).
	PlatformRegionsOnly bool `json:"platformRegionsOnly,omitempty"`
}

type trialRegionsSpec struct {
	Default string            `json:"default"`
	Regions []trialRegionSpec `json:"regions"`
	// EUAccessPlatformRegions are the EU access platform regions: a trial there runs in its
	// provider's euAccessRegion, whichever provider hosts the platform region, as upstream's
	// do (an Azure trial on cf-eu11 in switzerlandnorth).
	EUAccessPlatformRegions []string `json:"euAccessPlatformRegions,omitempty"`
}

type trialRegionSpec struct {
	Code            string   `json:"code"`
	DisplayName     string   `json:"displayName"`
	PlatformRegions []string `json:"platformRegions"`
}

type planSpec struct {
	DisplayName         string         `json:"displayName"`
	Description         string         `json:"description"`
	Provider            string         `json:"provider"`
	Providers           []string       `json:"providers,omitempty"`
	Form                string         `json:"form"`
	Regions             []string       `json:"regions,omitempty"`
	MachineTypes        []string       `json:"machineTypes,omitempty"`
	DefaultRegion       string         `json:"defaultRegion,omitempty"`
	DefaultMachineType  string         `json:"defaultMachineType,omitempty"`
	AutoScaler          autoScalerSpec `json:"autoScaler"`
	NodeCount           int            `json:"nodeCount"`
	Zones               zonesSpec      `json:"zones"`
	Lite                bool           `json:"lite,omitempty"`
	Trial               bool           `json:"trial,omitempty"`
	SharedPool          bool           `json:"sharedPool,omitempty"`
	OnePerGlobalAccount bool           `json:"onePerGlobalAccount,omitempty"`
	LifetimeDays        int            `json:"lifetimeDays,omitempty"`
	UpgradableToPlans   []string       `json:"upgradableToPlans,omitempty"`
	Purpose             string         `json:"purpose,omitempty"`
	// PlatformRegions narrows the plan's regions in the platform regions it names, over its
	// provider's platformRegions.
	PlatformRegions map[string][]string `json:"platformRegions,omitempty"`
	// TrialProviders are the other providers a trial may run on, chosen with the provider
	// parameter; provider is the default.
	TrialProviders []string `json:"trialProviders,omitempty"`
	VolumeSizeGb   int      `json:"volumeSizeGb,omitempty"`
	// DefaultMachineTypes are the default machine per provider of a plan whose provider varies
	// (a trial's provider parameter, free's platform region), over the provider's default.
	DefaultMachineTypes map[string]string `json:"defaultMachineTypes,omitempty"`
	// SmallerMachineTypes replace DefaultMachineTypes when the catalog is loaded with
	// SmallerMachineTypes (upstream's useSmallerMachineTypes).
	SmallerMachineTypes map[string]string `json:"smallerMachineTypes,omitempty"`
	// VolumeTypes are the worker disk type per provider, over the provider's volumeType.
	VolumeTypes map[string]string `json:"volumeTypes,omitempty"`
	// ForcedRegions are, per provider, the region the plan's runtimes run in whatever the region
	// parameter says (upstream's free on AWS: eu-central-1).
	ForcedRegions map[string]string `json:"forcedRegions,omitempty"`
	// DisabledParameters leaves parameters out that the form would offer (networking,
	// colocateControlPlane, gvisor), as upstream's disable* plan settings.
	DisabledParameters []string `json:"disabledParameters,omitempty"`
	// Optional features, each refused with a 400 on plans that do not enable it.
	IngressFiltering          bool `json:"ingressFiltering,omitempty"`
	AccessControlList         bool `json:"accessControlList,omitempty"`
	MaxAdditionalVolumeSizeGi int  `json:"maxAdditionalVolumeSizeGi,omitempty"`
}

type autoScalerSpec struct {
	Min        int `json:"min"`
	Max        int `json:"max"`
	DefaultMin int `json:"defaultMin"`
	DefaultMax int `json:"defaultMax"`
}

type zonesSpec struct {
	Max     int `json:"max"`
	Default int `json:"default"`
}

// disableableParameters are the parameters a plan may leave out of its form (disabledParameters).
var disableableParameters = []string{paramNetworking, paramColocateControlPlane, paramGVisor}

// maxZones is the most availability zones any hyperscaler region offers keb.
const maxZones = 3

// Gardener shoot purposes, a plan's purpose.
const (
	PurposeEvaluation  = "evaluation"
	PurposeTesting     = "testing"
	PurposeDevelopment = "development"
	PurposeProduction  = "production"
)

// Defaults of a plan that does not set its purpose or volume size: upstream's for paid plans.
const (
	defaultPurpose      = PurposeDevelopment
	defaultVolumeSizeGb = 80
)

// fileChecker collects every mistake in a plans file, so an operator fixes them in one go
// instead of one restart per typo.
type fileChecker struct{ errs []error }

func (fc *fileChecker) addf(format string, args ...any) {
	fc.errs = append(fc.errs, fmt.Errorf(format, args...))
}

// err joins the mistakes into one line, which reads better in a start-up log than one per line.
func (fc *fileChecker) err() error {
	if len(fc.errs) == 0 {
		return nil
	}
	msgs := make([]string, len(fc.errs))
	for i, e := range fc.errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// check reports every inconsistency in the file: unknown names, defaults outside their lists,
// bounds that contradict each other.
func (f *plansFile) check() error {
	fc := &fileChecker{}
	if len(f.Providers) == 0 {
		fc.addf("providers: none described")
	}
	for _, name := range sortedKeys(f.Providers) {
		f.Providers[name].check(fc, name)
	}
	f.TrialRegions.check(fc)
	for _, name := range sortedKeys(f.Providers) {
		if d := f.Providers[name].TrialDefaultRegion; d != "" && !slices.ContainsFunc(f.TrialRegions.Regions,
			func(r trialRegionSpec) bool { return r.Code == d }) {
			fc.addf("providers.%s.trialDefaultRegion: %q is not one of the trial regions", name, d)
		}
	}
	if len(f.Plans) == 0 {
		fc.addf("plans: none described")
	}
	for _, name := range sortedKeys(f.Plans) {
		f.checkPlan(fc, name, f.Plans[name])
	}
	return fc.err()
}

func (p providerSpec) check(fc *fileChecker, name string) {
	switch name {
	case ProviderAzure, ProviderAWS, ProviderGCP, ProviderOpenStack, ProviderAlicloud, ProviderGDCH:
	default:
		fc.addf("providers.%s: unknown provider (known: %s, %s, %s, %s, %s, %s)", name,
			ProviderAzure, ProviderAWS, ProviderGCP, ProviderOpenStack, ProviderAlicloud, ProviderGDCH)
	}
	if p.MachineImage != nil && p.MachineImage.Name == "" {
		fc.addf("providers.%s.machineImage.name: must not be empty", name)
	}
	checkOptions(fc, "providers."+name+".regions", p.Regions)
	checkOptions(fc, "providers."+name+".machineTypes", p.MachineTypes)
	// The concrete type need not be offered itself (upstream offers ri.large, never r8i.large),
	// but it must be concrete: a version-agnostic name resolving to another would be written
	// into the Runtime CR as it is.
	all := slices.Concat(p.MachineTypes, p.AdditionalMachineTypes)
	for i, o := range all {
		if o.ResolvesTo != "" && slices.ContainsFunc(all, func(t optionSpec) bool { return t.Code == o.ResolvesTo && t.ResolvesTo != "" }) {
			fc.addf("providers.%s.machineTypes[%d].resolvesTo: %q is a version-agnostic name itself", name, i, o.ResolvesTo)
		}
	}
	for _, r := range p.Regions {
		if r.ResolvesTo != "" {
			fc.addf("providers.%s.regions: %q: resolvesTo is for machine types only", name, r.Code)
		}
		if r.PlatformRegionsOnly && !slices.ContainsFunc(sortedKeys(p.PlatformRegions), func(pr string) bool { return slices.Contains(p.PlatformRegions[pr], r.Code) }) {
			fc.addf("providers.%s.regions: %q: platformRegionsOnly needs a platformRegions entry naming it", name, r.Code)
		}
		if r.PlatformRegionsOnly && r.Code == p.DefaultRegion {
			fc.addf("providers.%s.regions: %q: the default region cannot be platformRegionsOnly", name, r.Code)
		}
	}
	for _, m := range slices.Concat(p.MachineTypes, p.AdditionalMachineTypes) {
		if m.PlatformRegionsOnly {
			fc.addf("providers.%s.machineTypes: %q: platformRegionsOnly is for regions only", name, m.Code)
		}
	}
	for i, o := range p.AdditionalMachineTypes {
		if o.Code == "" || hasOptionSpec(p.MachineTypes, o.Code) || hasOptionSpec(p.AdditionalMachineTypes[:i], o.Code) {
			fc.addf("providers.%s.additionalMachineTypes[%d].code: %q is empty or listed twice", name, i, o.Code)
		}
	}
	for _, pr := range sortedKeys(p.PlatformRegions) {
		if err := ValidatePlatformRegion(pr); err != nil {
			fc.addf("providers.%s.platformRegions: %v", name, err)
		}
		if len(p.PlatformRegions[pr]) == 0 {
			fc.addf("providers.%s.platformRegions.%s: must list at least one region", name, pr)
		}
		for _, r := range p.PlatformRegions[pr] {
			if !hasOptionSpec(p.Regions, r) {
				fc.addf("providers.%s.platformRegions.%s: %q is not one of its regions", name, pr, r)
			}
		}
	}
	if p.PlatformRegionsOnly && len(p.PlatformRegions) == 0 {
		fc.addf("providers.%s.platformRegionsOnly: needs platformRegions", name)
	}
	if len(p.SeedRegions) > 0 {
		fc.addf("providers.%s.seedRegions: the seed regions are read from the control plane's ConfigMap gardener-seeds-cache "+
			"(APP_BROKER_GARDENER_SEEDS_CACHE_CONFIG_MAP_NAME), as upstream KEB reads them; remove this list", name)
	}
	if !hasOptionSpec(p.Regions, p.DefaultRegion) {
		fc.addf("providers.%s.defaultRegion: %q is not one of its regions", name, p.DefaultRegion)
	}
	if !hasOptionSpec(p.MachineTypes, p.DefaultMachineType) {
		fc.addf("providers.%s.defaultMachineType: %q is not one of its machine types", name, p.DefaultMachineType)
	}
	// A trial's region need not be offered to paid plans (upstream's AWS trials run in
	// eu-west-1): resources/zones.yaml must list its zones (loadZones).
	for _, trialRegion := range sortedKeys(p.TrialRegions) {
		if p.TrialRegions[trialRegion] == "" {
			fc.addf("providers.%s.trialRegions.%s: must not be empty", name, trialRegion)
		}
	}
	if _, err := parseMachineVersions(p.MachinesVersions); err != nil {
		fc.addf("providers.%s.machinesVersions: %v", name, err)
	}
}

func checkOptions(fc *fileChecker, path string, opts []optionSpec) {
	if len(opts) == 0 {
		fc.addf("%s: must list at least one entry", path)
	}
	seen := map[string]bool{}
	for i, o := range opts {
		if o.Code == "" {
			fc.addf("%s[%d].code: must not be empty", path, i)
		}
		if seen[o.Code] {
			fc.addf("%s[%d].code: %q is listed twice", path, i, o.Code)
		}
		seen[o.Code] = true
	}
}

func hasOptionSpec(opts []optionSpec, code string) bool {
	return slices.ContainsFunc(opts, func(o optionSpec) bool { return o.Code == code })
}

func (t trialRegionsSpec) check(fc *fileChecker) {
	if len(t.Regions) == 0 {
		fc.addf("trialRegions.regions: must list at least one entry")
	}
	seenCode, seenPlatform := map[string]bool{}, map[string]string{}
	for i, r := range t.Regions {
		if r.Code == "" {
			fc.addf("trialRegions.regions[%d].code: must not be empty", i)
		}
		if seenCode[r.Code] {
			fc.addf("trialRegions.regions[%d].code: %q is listed twice", i, r.Code)
		}
		seenCode[r.Code] = true
		for _, pr := range r.PlatformRegions {
			if other, dup := seenPlatform[pr]; dup {
				fc.addf("trialRegions.regions[%d].platformRegions: %q is already mapped to %q", i, pr, other)
			}
			seenPlatform[pr] = r.Code
		}
	}
	if !seenCode[t.Default] {
		fc.addf("trialRegions.default: %q is not one of the trial regions", t.Default)
	}
}

func (f *plansFile) checkPlan(fc *fileChecker, name string, p planSpec) {
	path := "plans." + name
	if _, known := planIDs[name]; !known {
		fc.addf("%s: unknown plan (known: %s)", path, strings.Join(sortedKeys(planIDs), ", "))
		return
	}
	if p.Description == "" {
		fc.addf("%s.description: must not be empty", path)
	}
	switch p.Form {
	case formFull, formBasic:
	default:
		fc.addf("%s.form: %q must be %q or %q", path, p.Form, formFull, formBasic)
	}

	if p.Provider == byPlatformRegion {
		if p.Trial {
			// Trial regions map to one provider's regions; see providers.*.trialRegions.
			fc.addf("%s: a trial plan needs a fixed provider", path)
		}
		if len(p.Providers) == 0 {
			fc.addf("%s.providers: a plan with provider %s must list the providers it may run on", path, byPlatformRegion)
		}
		for _, prov := range p.Providers {
			if _, ok := f.Providers[prov]; !ok {
				fc.addf("%s.providers: %q is not described under providers", path, prov)
			}
		}
		// Lists and defaults of one provider make no sense when the provider varies per request.
		if len(p.Regions) > 0 || len(p.MachineTypes) > 0 || p.DefaultRegion != "" || p.DefaultMachineType != "" || len(p.PlatformRegions) > 0 {
			fc.addf("%s: regions, machineTypes, defaultRegion, defaultMachineType and platformRegions need a fixed provider", path)
		}
	} else {
		if len(p.Providers) > 0 {
			fc.addf("%s.providers: only allowed with provider %s", path, byPlatformRegion)
		}
		if p.Trial && len(p.PlatformRegions) > 0 {
			fc.addf("%s.platformRegions: a trial's regions are trial regions; narrow its provider's platformRegions instead", path)
		}
		if len(p.TrialProviders) > 0 && !p.Trial {
			fc.addf("%s.trialProviders: only allowed on a trial plan", path)
		}
		prov, ok := f.Providers[p.Provider]
		if !ok {
			fc.addf("%s.provider: %q is not described under providers (or use %s)", path, p.Provider, byPlatformRegion)
		} else {
			checkSubset(fc, path+".regions", p.Regions, prov.Regions)
			for _, pr := range sortedKeys(p.PlatformRegions) {
				if err := ValidatePlatformRegion(pr); err != nil {
					fc.addf("%s.platformRegions: %v", path, err)
				}
				if len(p.PlatformRegions[pr]) == 0 {
					fc.addf("%s.platformRegions.%s: must list at least one region", path, pr)
				}
				for _, r := range p.PlatformRegions[pr] {
					if !offered(p.Regions, prov.Regions, r) {
						fc.addf("%s.platformRegions.%s: %q is not offered by the plan", path, pr, r)
					}
				}
			}
			checkSubset(fc, path+".machineTypes", p.MachineTypes, prov.MachineTypes)
			if p.DefaultRegion != "" && !offered(p.Regions, prov.Regions, p.DefaultRegion) {
				fc.addf("%s.defaultRegion: %q is not offered by the plan", path, p.DefaultRegion)
			}
			// Without its own default, a plan narrowing the regions must keep the provider's.
			if p.DefaultRegion == "" && len(p.Regions) > 0 && !slices.Contains(p.Regions, prov.DefaultRegion) {
				fc.addf("%s.defaultRegion: needed, the provider's default %q is not among the plan's regions", path, prov.DefaultRegion)
			}
			if p.DefaultMachineType != "" && !offered(p.MachineTypes, prov.MachineTypes, p.DefaultMachineType) {
				fc.addf("%s.defaultMachineType: %q is not offered by the plan", path, p.DefaultMachineType)
			}
			if p.DefaultMachineType == "" && len(p.MachineTypes) > 0 && !slices.Contains(p.MachineTypes, prov.DefaultMachineType) {
				fc.addf("%s.defaultMachineType: needed, the provider's default %q is not among the plan's machine types", path, prov.DefaultMachineType)
			}
			if p.Trial {
				for _, name := range append([]string{p.Provider}, p.TrialProviders...) {
					tp, ok := f.Providers[name]
					if !ok || trialProviderLabels[name] == "" {
						fc.addf("%s.trialProviders: %q is not a provider a trial can run on (%s, %s, %s)", path, name, ProviderAzure, ProviderAWS, ProviderGCP)
						continue
					}
					for _, tr := range f.TrialRegions.Regions {
						if _, ok := tp.TrialRegions[tr.Code]; !ok {
							fc.addf("%s: trial plan on %s needs providers.%s.trialRegions.%s", path, name, name, tr.Code)
						}
					}
				}
			}
		}
	}

	a := p.AutoScaler
	switch {
	case a.Min < 1:
		fc.addf("%s.autoScaler.min: %d must be at least 1", path, a.Min)
	case a.Max < a.Min:
		fc.addf("%s.autoScaler.max: %d must not be below min %d", path, a.Max, a.Min)
	case a.DefaultMin < a.Min || a.DefaultMin > a.Max:
		fc.addf("%s.autoScaler.defaultMin: %d must be within min..max (%d..%d)", path, a.DefaultMin, a.Min, a.Max)
	case a.DefaultMax < a.DefaultMin || a.DefaultMax > a.Max:
		fc.addf("%s.autoScaler.defaultMax: %d must be within defaultMin..max (%d..%d)", path, a.DefaultMax, a.DefaultMin, a.Max)
	case p.NodeCount < a.Min || p.NodeCount > a.Max:
		fc.addf("%s.nodeCount: %d must be within autoScaler min..max (%d..%d)", path, p.NodeCount, a.Min, a.Max)
	}
	if p.Zones.Max < 1 || p.Zones.Max > maxZones {
		fc.addf("%s.zones.max: %d must be within 1..%d", path, p.Zones.Max, maxZones)
	} else if p.Zones.Default < 1 || p.Zones.Default > p.Zones.Max {
		fc.addf("%s.zones.default: %d must be within 1..max (%d)", path, p.Zones.Default, p.Zones.Max)
	}
	switch p.Purpose {
	case "", PurposeEvaluation, PurposeTesting, PurposeDevelopment, PurposeProduction:
	default:
		fc.addf("%s.purpose: %q must be one of %s, %s, %s, %s", path, p.Purpose,
			PurposeEvaluation, PurposeTesting, PurposeDevelopment, PurposeProduction)
	}
	f.checkPerProvider(fc, path, p)
	for _, d := range p.DisabledParameters {
		if !slices.Contains(disableableParameters, d) {
			fc.addf("%s.disabledParameters: %q cannot be disabled (only %s)", path, d, strings.Join(disableableParameters, ", "))
		}
	}
	if p.MaxAdditionalVolumeSizeGi < 0 {
		fc.addf("%s.maxAdditionalVolumeSizeGi: %d must not be negative", path, p.MaxAdditionalVolumeSizeGi)
	}
	if p.VolumeSizeGb < 0 {
		fc.addf("%s.volumeSizeGb: %d must not be negative", path, p.VolumeSizeGb)
	}
	if p.LifetimeDays < 0 {
		fc.addf("%s.lifetimeDays: %d must not be negative", path, p.LifetimeDays)
	}
	for _, to := range p.UpgradableToPlans {
		target, described := f.Plans[to]
		switch {
		case to == name:
			fc.addf("%s.upgradableToPlans: %q is the plan itself", path, to)
		case !described:
			fc.addf("%s.upgradableToPlans: %q is not described under plans", path, to)
		case target.Trial || target.Provider == byPlatformRegion:
			// A trial's region is a trial region and a free plan's provider follows the
			// platform region: neither can take over a running cluster's region.
			fc.addf("%s.upgradableToPlans: %q cannot be upgraded to (trial plans and plans with provider %s cannot take over a running runtime)", path, to, byPlatformRegion)
		}
	}
}

// checkPerProvider checks a plan's defaultMachineTypes, volumeTypes and forcedRegions: each for
// a provider the plan runs on, a machine or region among that provider's.
func (f *plansFile) checkPerProvider(fc *fileChecker, path string, p planSpec) {
	runsOn := append([]string{p.Provider}, p.TrialProviders...)
	if p.Provider == byPlatformRegion {
		runsOn = p.Providers
	}
	for key, machines := range map[string]map[string]string{"defaultMachineTypes": p.DefaultMachineTypes, "smallerMachineTypes": p.SmallerMachineTypes} {
		for _, prov := range sortedKeys(machines) {
			if !slices.Contains(runsOn, prov) {
				fc.addf("%s.%s.%s: the plan does not run on %s", path, key, prov, prov)
			} else if !hasOptionSpec(f.Providers[prov].MachineTypes, machines[prov]) {
				fc.addf("%s.%s.%s: %q is not one of the provider's machine types", path, key, prov, machines[prov])
			}
		}
	}
	for _, prov := range sortedKeys(p.VolumeTypes) {
		if !slices.Contains(runsOn, prov) {
			fc.addf("%s.volumeTypes.%s: the plan does not run on %s", path, prov, prov)
		}
	}
	for _, prov := range sortedKeys(p.ForcedRegions) {
		if !slices.Contains(runsOn, prov) {
			fc.addf("%s.forcedRegions.%s: the plan does not run on %s", path, prov, prov)
		} else if p.Trial || !hasOptionSpec(f.Providers[prov].Regions, p.ForcedRegions[prov]) {
			fc.addf("%s.forcedRegions.%s: %q is not one of the provider's regions (a trial's are its trialRegions)", path, prov, p.ForcedRegions[prov])
		}
	}
}

func checkSubset(fc *fileChecker, path string, codes []string, all []optionSpec) {
	for _, code := range codes {
		if !hasOptionSpec(all, code) {
			fc.addf("%s: %q is not offered by the provider", path, code)
		}
	}
}

// offered reports whether code is in the plan's subset, or in the provider's list when the plan
// has no subset.
func offered(subset []string, all []optionSpec, code string) bool {
	if len(subset) > 0 {
		return slices.Contains(subset, code)
	}
	return hasOptionSpec(all, code)
}

// narrow returns the provider's options limited to the plan's subset, in the provider's order.
func narrow(all []optionSpec, subset []string) []Option {
	var out []Option
	for _, o := range all {
		if len(subset) == 0 || slices.Contains(subset, o.Code) {
			out = append(out, Option{Code: o.Code, DisplayName: o.DisplayName})
		}
	}
	return out
}

// toPlan converts a checked plan entry to its public form.
func (p planSpec) toPlan(name string, providers map[string]providerSpec) Plan {
	plan := Plan{
		ID:                        planIDs[name],
		Name:                      name,
		DisplayName:               p.DisplayName,
		Description:               p.Description,
		Lite:                      p.Lite,
		Trial:                     p.Trial,
		SharedPool:                p.SharedPool,
		OnePerGlobalAccount:       p.OnePerGlobalAccount,
		Lifetime:                  time.Duration(p.LifetimeDays) * 24 * time.Hour,
		AutoScalerMin:             p.AutoScaler.Min,
		AutoScalerMax:             p.AutoScaler.Max,
		DefaultAutoScalerMin:      p.AutoScaler.DefaultMin,
		DefaultAutoScalerMax:      p.AutoScaler.DefaultMax,
		DefaultNodeCount:          p.NodeCount,
		MaxZonesCount:             p.Zones.Max,
		DefaultZonesCount:         p.Zones.Default,
		BasicForm:                 p.Form == formBasic,
		UpgradableTo:              append([]string(nil), p.UpgradableToPlans...),
		Purpose:                   firstNonEmpty(p.Purpose, defaultPurpose),
		VolumeSizeGb:              p.VolumeSizeGb,
		IngressFiltering:          p.IngressFiltering,
		AccessControlList:         p.AccessControlList,
		MaxAdditionalVolumeSizeGi: p.MaxAdditionalVolumeSizeGi,
		DefaultMachineTypes:       maps.Clone(p.DefaultMachineTypes),
		SmallerMachineTypes:       maps.Clone(p.SmallerMachineTypes),
		VolumeTypes:               maps.Clone(p.VolumeTypes),
		ForcedRegions:             maps.Clone(p.ForcedRegions),
		DisabledParameters:        append([]string(nil), p.DisabledParameters...),
	}
	if p.Trial && len(p.TrialProviders) > 0 {
		plan.TrialProviders = append([]string{p.Provider}, p.TrialProviders...)
	}
	if plan.VolumeSizeGb == 0 {
		plan.VolumeSizeGb = defaultVolumeSizeGb
	}
	if plan.DisplayName == "" {
		plan.DisplayName = name
	}
	if p.Provider == byPlatformRegion {
		plan.Providers = append([]string(nil), p.Providers...)
		return plan
	}
	plan.Provider = p.Provider
	prov := providers[p.Provider]
	plan.DefaultRegion = firstNonEmpty(p.DefaultRegion, prov.DefaultRegion)
	plan.DefaultMachineType = firstNonEmpty(p.DefaultMachineType, prov.DefaultMachineType)
	if p.Trial {
		// A trial's region follows the platform region; see Catalog.trialArea.
		plan.DefaultRegion = ""
	}
	return plan
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
