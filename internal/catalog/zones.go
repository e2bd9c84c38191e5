package catalog

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/resources"
)

// zonesFile is resources/zones.yaml: every region's availability zones and how many of them a
// worker pool gets.
type zonesFile struct {
	ZonesCount struct {
		HA    int `json:"ha"`
		NonHA int `json:"nonHA"`
	} `json:"zonesCount"`
	// Providers maps provider → region → zone suffixes.
	Providers map[string]map[string][]string `json:"providers"`
}

// regionZones are the zones of every region, with their full names, and the pool zone counts.
type regionZones struct {
	byRegion  map[string]map[string][]string // provider → region → full zone names
	ha, nonHA int
}

// loadZones reads the embedded zones file and checks that it names zones for every region of
// the plans file.
func loadZones(f *plansFile) (regionZones, error) {
	source := "embedded resources/" + resources.ZonesFile
	data, err := resources.FS.ReadFile(resources.ZonesFile)
	if err != nil {
		return regionZones{}, fmt.Errorf("read zones file %s: %w", source, err)
	}
	var zf zonesFile
	if err := yaml.UnmarshalStrict(data, &zf); err != nil {
		return regionZones{}, fmt.Errorf("zones file %s: %w", source, err)
	}
	fc := &fileChecker{}
	if zf.ZonesCount.HA < 1 || zf.ZonesCount.HA > maxZones {
		fc.addf("zonesCount.ha: %d must be within 1..%d", zf.ZonesCount.HA, maxZones)
	}
	if zf.ZonesCount.NonHA < 1 || zf.ZonesCount.NonHA > zf.ZonesCount.HA {
		fc.addf("zonesCount.nonHA: %d must be within 1..zonesCount.ha", zf.ZonesCount.NonHA)
	}
	z := regionZones{byRegion: map[string]map[string][]string{}, ha: zf.ZonesCount.HA, nonHA: zf.ZonesCount.NonHA}
	for _, provider := range sortedKeys(zf.Providers) {
		z.byRegion[provider] = map[string][]string{}
		for _, region := range sortedKeys(zf.Providers[provider]) {
			suffixes := zf.Providers[provider][region]
			if len(suffixes) == 0 {
				fc.addf("providers.%s.%s: no zones", provider, region)
			}
			names := make([]string, 0, len(suffixes))
			for _, s := range suffixes {
				name := fullZoneName(provider, region, s)
				if s == "" || slices.Contains(names, name) {
					fc.addf("providers.%s.%s: zone %q empty or listed twice", provider, region, s)
				}
				names = append(names, name)
			}
			z.byRegion[provider][region] = names
		}
	}
	for _, provider := range sortedKeys(f.Providers) {
		for _, r := range f.Providers[provider].Regions {
			if len(r.Zones) > 0 {
				if z.byRegion[provider] == nil {
					z.byRegion[provider] = map[string][]string{}
				}
				z.byRegion[provider][r.Code] = nil
				for _, s := range r.Zones {
					z.byRegion[provider][r.Code] = append(z.byRegion[provider][r.Code], fullZoneName(provider, r.Code, s))
				}
				continue
			}
			if len(z.byRegion[provider][r.Code]) == 0 {
				fc.addf("providers.%s.%s: missing; the plans file offers this region without zones of its own", provider, r.Code)
			}
		}
		// Trials may run in regions paid plans do not offer (AWS eu-west-1).
		p := f.Providers[provider]
		for _, r := range append(slices.Sorted(maps.Values(p.TrialRegions)), p.EUAccessRegion) {
			if r != "" && !hasOptionSpec(p.Regions, r) && len(z.byRegion[provider][r]) == 0 {
				fc.addf("providers.%s.%s: missing; the plans file places trials there", provider, r)
			}
		}
	}
	if err := fc.err(); err != nil {
		return regionZones{}, fmt.Errorf("zones file %s: %w", source, err)
	}
	return z, nil
}

// fullZoneName is a zone's name as the provider (and Gardener) spells it.
func fullZoneName(provider, region, suffix string) string {
	switch strings.ToLower(provider) {
	case ProviderAzure:
		return suffix
	case ProviderGCP, ProviderGDCH:
		return region + "-" + suffix
	case ProviderAlicloud:
		// As upstream (internal/provider/zones.go): eu-central-1 + a, a region without a
		// trailing digit region-a.
		if last := region[len(region)-1]; last < '0' || last > '9' {
			return region + "-" + suffix
		}
		return region + suffix
	default:
		return region + suffix
	}
}

// RegionZones are all availability zones of a provider's region, full names, in the zones
// file's order; nil for a region the file does not list.
func (c *Catalog) RegionZones(provider, region string) []string {
	return slices.Clone(c.zones.byRegion[strings.ToLower(provider)][region])
}

// PickZones chooses n of a region's zones for a runtime (fewer when the region has fewer):
// the region's zones shuffled in an order of the runtime's own, seeded by its ID, so that
// runtimes spread over the zones as upstream's random shuffle spreads them while every re-run
// for one runtime names the same zones. An additional pool's zones are a prefix of the same
// order (PoolZones), that is the Kyma pool's zones.
func (c *Catalog) PickZones(provider, region, seed string, n int) []string {
	zones := c.RegionZones(provider, region)
	key := func(z string) uint64 {
		h := fnv.New64a()
		h.Write([]byte(seed))
		h.Write([]byte{0})
		h.Write([]byte(z))
		return h.Sum64()
	}
	slices.SortStableFunc(zones, func(a, b string) int { return cmp.Compare(key(a), key(b)) })
	return zones[:min(max(n, 0), len(zones))]
}

// KeepZones are a running pool's zones have, grown to n with the zones PickZones would choose
// that have lacks (as many as the region has); have as it is when it holds n or more, even
// zones the region no longer lists (chosen by an earlier keb version, they stay).
func (c *Catalog) KeepZones(have []string, provider, region, seed string, n int) []string {
	zones := slices.Clone(have)
	for _, z := range c.PickZones(provider, region, seed, len(c.zones.byRegion[strings.ToLower(provider)][region])) {
		if len(zones) >= n {
			break
		}
		if !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	return zones
}

// PoolZones are an additional pool's zones on a plan, taken from the Kyma pool's zones:
// the first zonesCount.ha of them with haZones (on a multi-zone plan), the first
// zonesCount.nonHA without.
func (c *Catalog) PoolZones(plan Plan, p WorkerPool, kymaZones []string) []string {
	n := c.zones.nonHA
	if haPool(plan, p) {
		n = c.zones.ha
	}
	return slices.Clone(kymaZones[:min(n, len(kymaZones))])
}
