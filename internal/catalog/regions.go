package catalog

import (
	"fmt"
	"regexp"
	"strings"
)

// Provider names, as used in the plans file, in Plan.Provider and in hyperscaler-type labels.
const (
	ProviderAzure     = "azure"
	ProviderAWS       = "aws"
	ProviderGCP       = "gcp"
	ProviderOpenStack = "openstack"
	ProviderAlicloud  = "alicloud"
	ProviderGDCH      = "gdch"
)

// DefaultPlatformRegion is the platform region of requests that arrive without one (on /oauth/v2
// rather than /oauth/{region}/v2).
const DefaultPlatformRegion = "cf-eu10"

// platformRegionDigitProviders maps the first digit of a platform region to the provider hosting
// it; the platforms name their regions that way (cf-eu10 runs on AWS, cf-eu20 on Azure).
var platformRegionDigitProviders = map[byte]string{
	'0': ProviderOpenStack,
	'1': ProviderAWS,
	'2': ProviderAzure,
	'3': ProviderGCP,
	'4': ProviderAlicloud,
}

// ProviderForPlatformRegion returns the provider hosting a platform region, read from the first
// digit of its name: 0 openstack, 1 aws, 2 azure, 3 gcp, 4 alicloud (cf-eu10 → aws, cf-eu20 → azure,
// cf-us30 → gcp). A name without a digit, or with another first digit, is an error.
func ProviderForPlatformRegion(platformRegion string) (string, error) {
	i := strings.IndexFunc(platformRegion, func(r rune) bool { return r >= '0' && r <= '9' })
	if i < 0 {
		return "", fmt.Errorf("platform region %q: no digit to tell its provider by", platformRegion)
	}
	provider, ok := platformRegionDigitProviders[platformRegion[i]]
	if !ok {
		return "", fmt.Errorf("platform region %q: digit %c names no known provider (0 openstack, 1 aws, 2 azure, 3 gcp, 4 alicloud)",
			platformRegion, platformRegion[i])
	}
	return provider, nil
}

// platformRegionSyntax is how platforms name their regions: lower-case words of letters and
// digits joined by '-' (cf-eu10, cf-us30, neo-eu20).
var platformRegionSyntax = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidatePlatformRegion accepts a platform region keb can place runtimes for: at most 32
// characters in the platforms' syntax, with a first digit naming a provider (see
// ProviderForPlatformRegion). Anything else would be stored and followed wrongly later.
func ValidatePlatformRegion(platformRegion string) error {
	if len(platformRegion) > 32 || !platformRegionSyntax.MatchString(platformRegion) {
		shown := platformRegion
		if len(shown) > 32 {
			shown = shown[:32] + "…"
		}
		return fmt.Errorf("platform region %q is not a region name (lower-case letters and digits joined by '-', at most 32 characters, such as cf-eu10)", shown)
	}
	_, err := ProviderForPlatformRegion(platformRegion)
	return err
}

// Option is one choice in a parameter's enum: the code users send and the name forms show.
type Option struct {
	Code        string
	DisplayName string
}

func optionCodes(opts []Option) []string {
	codes := make([]string, len(opts))
	for i, o := range opts {
		codes[i] = o.Code
	}
	return codes
}

func hasOption(opts []Option, code string) bool {
	for _, o := range opts {
		if o.Code == code {
			return true
		}
	}
	return false
}

// TrialRegion returns the trial region (europe, us, asia) a trial request from platformRegion
// gets when it names none: the one listing that platform region in the plans file, else the
// file's default.
func (c *Catalog) TrialRegion(platformRegion string) string {
	if r, ok := c.trialByPlatform[platformRegion]; ok {
		return r
	}
	return c.trialDefault
}

// ProviderForPlan returns the provider a runtime of the plan runs on for a request from
// platformRegion ("" means DefaultPlatformRegion). Fixed-provider plans ignore the platform
// region; for the others (free) it is the platform region's provider when the plan allows it,
// else the plan's first provider — as upstream does, so that free works in every platform region.
func (c *Catalog) ProviderForPlan(planID, platformRegion string) (string, error) {
	e, ok := c.plans[planID]
	if !ok {
		return "", fmt.Errorf("%w %q", ErrUnknownPlan, planID)
	}
	return e.providerFor(platformRegion), nil
}

func (e *planEntry) providerFor(platformRegion string) string {
	if e.plan.Provider != "" {
		return e.plan.Provider
	}
	if platformRegion == "" {
		platformRegion = DefaultPlatformRegion
	}
	if p, err := ProviderForPlatformRegion(platformRegion); err == nil {
		for _, allowed := range e.plan.Providers {
			if allowed == p {
				return p
			}
		}
	}
	return e.plan.Providers[0]
}
