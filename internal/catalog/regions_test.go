package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestProviderForPlatformRegion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		platformRegion string
		want           string
		wantErr        bool
	}{
		{name: "aws europe", platformRegion: "cf-eu10", want: ProviderAWS},
		{name: "aws us", platformRegion: "cf-us10", want: ProviderAWS},
		{name: "azure europe", platformRegion: "cf-eu20", want: ProviderAzure},
		{name: "azure asia", platformRegion: "cf-ap21", want: ProviderAzure},
		{name: "gcp us", platformRegion: "cf-us30", want: ProviderGCP},
		{name: "openstack", platformRegion: "cf-eu01", want: ProviderOpenStack},
		{name: "no prefix", platformRegion: "eu20", want: ProviderAzure},
		{name: "empty", platformRegion: "", wantErr: true},
		{name: "no digit", platformRegion: "cf-eu", wantErr: true},
		{name: "unknown digit", platformRegion: "cf-eu50", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ProviderForPlatformRegion(tt.platformRegion)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("provider = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProviderForPlan(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	tests := []struct {
		name, planID, platformRegion, want string
	}{
		{name: "fixed provider ignores platform region", planID: GCPPlanID, platformRegion: "cf-eu20", want: ProviderGCP},
		{name: "free on aws region", planID: FreePlanID, platformRegion: "cf-eu10", want: ProviderAWS},
		{name: "free on azure region", planID: FreePlanID, platformRegion: "cf-eu20", want: ProviderAzure},
		{name: "free on gcp region falls back", planID: FreePlanID, platformRegion: "cf-us30", want: ProviderAWS},
		{name: "free on unparsable region falls back", planID: FreePlanID, platformRegion: "somewhere", want: ProviderAWS},
		{name: "free default platform region", planID: FreePlanID, platformRegion: "", want: ProviderAWS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.ProviderForPlan(tt.planID, tt.platformRegion)
			if err != nil || got != tt.want {
				t.Errorf("ProviderForPlan = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestPlanPlatformRegions: a plan's own platformRegions narrow its regions
// in the platform regions it names (the plan's list wins over its
// provider's); elsewhere the plan keeps its list; a region its default is
// not among gets the list's first as default; a mistake in the lists stops
// the load.
func TestPlanPlatformRegions(t *testing.T) {
	t.Parallel()
	file := minimalPlansFile + `    platformRegions:
      cf-eu20: [swedencentral]
`
	c, err := Load(writeFile(t, strings.Replace(file, "      - {code: Standard_D4s_v5, displayName: \"Standard_D4s_v5 (4vCPU, 16GB RAM)\"}\n",
		"      - {code: Standard_D4s_v5, displayName: \"Standard_D4s_v5 (4vCPU, 16GB RAM)\"}\n    platformRegions:\n      cf-eu20: [northeurope]\n      cf-eu21: [northeurope]\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	regions := func(pr string) []any {
		s, err := c.ServicesFor(pr, []string{"azure"})
		if err != nil {
			t.Fatal(err)
		}
		return s[0].Plans[0].Schemas.Instance.Create.Parameters["properties"].(map[string]any)["region"].(map[string]any)["enum"].([]any)
	}
	if got := fmt.Sprint(regions("cf-eu20")); got != "[swedencentral]" {
		t.Errorf("cf-eu20 (the plan's list): %s", got)
	}
	if got := fmt.Sprint(regions("cf-eu21")); got != "[northeurope]" {
		t.Errorf("cf-eu21 (the provider's list): %s", got)
	}
	if got := fmt.Sprint(regions("cf-us20")); got != "[northeurope swedencentral]" {
		t.Errorf("cf-us20 (not named): %s", got)
	}
	res, err := c.Resolve(AzurePlanID, "cf-eu20", ProvisioningParameters{Name: "x"})
	if err != nil || res.Region != "swedencentral" {
		t.Errorf("default region on cf-eu20: %q, %v", res.Region, err)
	}

	_, err = Load(writeFile(t, minimalPlansFile+`    platformRegions:
      cf-eu20: [westeurope]
`))
	if err == nil || !strings.Contains(err.Error(), `plans.azure.platformRegions.cf-eu20: "westeurope" is not offered by the plan`) {
		t.Errorf("a region the plan does not offer: %v", err)
	}
}

// TestFreeRegionsNeverMixProviders: in every platform region, named in the plans file or not, the
// free plan's form offers one provider's regions, Azure's on Azure platform regions and AWS's on
// every other, as upstream's free schema does.
func TestFreeRegionsNeverMixProviders(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	providerOf := map[string]string{}
	for _, prov := range []string{ProviderAWS, ProviderAzure} {
		for _, r := range c.plans[FreePlanID].offers[prov].regions {
			providerOf[r.Code] = prov
		}
	}
	for _, tc := range []struct{ pr, want string }{
		{"cf-eu10", ProviderAWS}, {"cf-eu11", ProviderAWS}, {"cf-us10", ProviderAWS}, {"cf-jp10", ProviderAWS},
		{"cf-eu20", ProviderAzure}, {"cf-ch20", ProviderAzure}, {"cf-us21", ProviderAzure}, {"cf-ap21", ProviderAzure}, {"cf-eu21", ProviderAzure},
		{"cf-us30", ProviderAWS}, {"cf-in30", ProviderAWS}, {"cf-eu01", ProviderAWS}, {"neo-xx", ProviderAWS},
	} {
		services, err := c.ServicesFor(tc.pr, []string{FreePlanName})
		if err != nil {
			t.Fatalf("%s: %v", tc.pr, err)
		}
		if len(services) != 1 || len(services[0].Plans) != 1 {
			t.Fatalf("%s: services %+v", tc.pr, services)
		}
		schema := services[0].Plans[0].Schemas.Instance.Create.Parameters
		regions := asStrings(schema["properties"].(map[string]any)["region"].(map[string]any)["enum"])
		if len(regions) == 0 {
			t.Errorf("%s: no free regions", tc.pr)
		}
		for _, r := range regions {
			if providerOf[r] != tc.want {
				t.Errorf("%s: free offers %s (%s), want only %s regions: %v", tc.pr, r, providerOf[r], tc.want, regions)
				break
			}
		}
	}
}

// TestTrialRegionAndProviderAreHidden: the trial form shows neither region nor provider, as
// upstream's; both are still accepted and checked as hidden parameters.
func TestTrialRegionAndProviderAreHidden(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	raw, err := c.CreateSchema(TrialPlanID)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := decodeSchema(raw)
	props := schema["properties"].(map[string]any)
	if props["region"] != nil || props["provider"] != nil {
		t.Errorf("trial form shows region/provider: %v", asStrings(schema["_controlsOrder"]))
	}
	p, err := c.ValidateParameters(TrialPlanID, "cf-eu10", json.RawMessage(`{"name":"t","region":"asia","provider":"AWS"}`))
	if err != nil || p.Region == nil || *p.Region != "asia" || TrialProvider(p.Provider) != ProviderAWS {
		t.Errorf("hidden region/provider: %+v, %v", p, err)
	}
	for raw, want := range map[string]string{
		`{"name":"t","region":"mars"}`:   "region",
		`{"name":"t","provider":"Moon"}`: "provider",
	} {
		_, err := c.ValidateParameters(TrialPlanID, "cf-eu10", json.RawMessage(raw))
		var verr *ValidationError
		if !errors.As(err, &verr) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a validation error naming %s", raw, err, want)
		}
	}
}

// TestUpstreamProviderName: upstream KEB's names of the providers (its Runtime CR label
// kyma-project.io/provider and its /runtimes provider field), whatever case keb's type is in.
func TestUpstreamProviderName(t *testing.T) {
	t.Parallel()
	for provider, want := range map[string]string{"aws": "AWS", "azure": "Azure", "gcp": "GCP", "openstack": "SapConvergedCloud",
		"alicloud": "Alicloud", "gdch": "GDCH", "AWS": "AWS", "OpenStack": "SapConvergedCloud", "": "unknown", "ibm": "unknown"} {
		if got := UpstreamProviderName(provider); got != want {
			t.Errorf("UpstreamProviderName(%q) = %q, want %q", provider, got, want)
		}
	}
}
