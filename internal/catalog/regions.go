package catalog

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
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

// upstreamProviderNames are upstream KEB's names of the providers (its CloudProvider values),
// which its Runtime CR label kyma-project.io/provider and its /runtimes field provider carry.
var upstreamProviderNames = map[string]string{
	ProviderAWS:       "AWS",
	ProviderAzure:     "Azure",
	ProviderGCP:       "GCP",
	ProviderOpenStack: "SapConvergedCloud",
	ProviderAlicloud:  "Alicloud",
	ProviderGDCH:      "GDCH",
}

// UpstreamProviderName is upstream KEB's name of a provider type (AWS, Azure, GCP,
// SapConvergedCloud, Alicloud, GDCH; "unknown" for any other, as upstream), whatever the case
// provider is written in: tools written against upstream key on these values.
func UpstreamProviderName(provider string) string {
	if n, ok := upstreamProviderNames[strings.ToLower(provider)]; ok {
		return n
	}
	return "unknown"
}

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

// ErrPlatformProviderNotSupported is wrapped by the refusal of a plan whose provider follows the
// platform region (free) where that region's hyperscaler is not one the plan runs on.
var ErrPlatformProviderNotSupported = errors.New("plan not supported on this platform region's hyperscaler")

// PlatformProviderProblem refuses a new runtime of a plan whose provider follows the platform
// region (free) where that hyperscaler is not one the plan runs on (GCP, SAP Cloud
// Infrastructure), or where the request names no platform region (pathRegion false: /oauth/v2):
// upstream answers both with a 400 ("freemium provider for '<provider>' is not supported"), and
// its schema offers the first provider's regions there all the same. nil for any other plan.
func (c *Catalog) PlatformProviderProblem(plan Plan, platformRegion string, pathRegion bool) error {
	if !plan.ByPlatformRegion() {
		return nil
	}
	runsOn := make([]string, len(plan.Providers))
	for i, p := range plan.Providers {
		runsOn[i] = providerLabel(p)
	}
	if !pathRegion {
		return fmt.Errorf("%w: plan %s runs on the hyperscaler of the platform region in the request's path (/oauth/{region}/v2/...), "+
			"one of %s; this request names none", ErrPlatformProviderNotSupported, plan.Name, strings.Join(runsOn, ", "))
	}
	p, err := ProviderForPlatformRegion(platformRegion)
	if err == nil && slices.Contains(plan.Providers, p) {
		return nil
	}
	host := "an unknown hyperscaler"
	if err == nil {
		host = providerLabel(p)
	}
	return fmt.Errorf("%w: plan %s runs on the platform region's own hyperscaler, one of %s; platform region %s is hosted on %s",
		ErrPlatformProviderNotSupported, plan.Name, strings.Join(runsOn, ", "), platformRegion, host)
}
