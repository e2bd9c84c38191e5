package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The lists below are upstream KEB 1.35's provider data (cmd/broker/testdata/plans.yaml and
// providers.yaml, as ../shared/reference/upstream-fidelity.md §4 reproduces them), written out
// here independently of resources/plans.yaml: the cockpit must offer exactly these, in this order.

func sizes(prefix string, names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

var (
	awsSizes    = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"}
	awsGPUSizes = []string{"xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"}

	upstreamAWSRegular = slices.Concat(sizes("mi.", awsSizes...), sizes("m6i.", awsSizes...), sizes("m5.", awsSizes...))
	upstreamAWSPools   = slices.Concat(upstreamAWSRegular, sizes("c7i.", awsSizes...), sizes("g6.", awsGPUSizes...),
		sizes("g4dn.", awsGPUSizes...), sizes("ri.", awsSizes...))
	upstreamAzureRegular = slices.Concat(sizes("Standard_D", "2s_v5", "4s_v5", "8s_v5", "16s_v5", "32s_v5", "48s_v5", "64s_v5"),
		sizes("Standard_D", "4_v3", "8_v3", "16_v3", "32_v3", "48_v3", "64_v3"))
	upstreamAzurePools = slices.Concat(upstreamAzureRegular,
		sizes("Standard_F", "2s_v2", "4s_v2", "8s_v2", "16s_v2", "32s_v2", "48s_v2", "64s_v2"),
		sizes("Standard_NC", "4as_T4_v3", "8as_T4_v3", "16as_T4_v3", "64as_T4_v3"))
	upstreamAzureLite  = []string{"Standard_D2s_v5", "Standard_D4s_v5", "Standard_D4_v3"}
	upstreamGCPRegular = sizes("n2-standard-", "2", "4", "8", "16", "32", "48", "64")
	upstreamGCPPools   = slices.Concat(upstreamGCPRegular, sizes("c2d-highcpu-", "2", "4", "8", "16", "32", "56"),
		sizes("g2-standard-", "4", "8", "12", "16", "24", "32", "48"))
	upstreamSCC = []string{"g_c2_m8", "g_c4_m16", "g_c6_m24", "g_c8_m32", "g_c12_m48", "g_c16_m64", "g_c32_m128", "g_c64_m256"}

	upstreamAWSRegions = []string{"eu-central-1", "eu-west-2", "ca-central-1", "sa-east-1", "us-east-1", "us-west-2",
		"ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2"}
	upstreamAzureRegions = []string{"eastus", "centralus", "westus2", "uksouth", "northeurope", "westeurope", "japaneast",
		"southeastasia", "australiaeast", "brazilsouth", "canadacentral"}
	upstreamGCPRegions = []string{"europe-west3", "asia-south1", "us-central1", "me-central2", "asia-northeast2", "me-west1",
		"southamerica-east1", "australia-southeast1", "asia-northeast1", "asia-southeast1", "us-west1", "us-east4", "europe-west4"}
)

// schemaEnum is the enum of a property at a dotted path of a schema document ("region",
// "additionalWorkerNodePools.items.machineType").
func schemaEnum(t *testing.T, doc map[string]any, path string) []string {
	t.Helper()
	cur := doc
	parts := strings.Split(path, ".")
	for i, p := range parts {
		if p == "items" {
			cur, _ = cur["items"].(map[string]any)
			continue
		}
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[p].(map[string]any)
		if !ok {
			t.Fatalf("schema has no %s", strings.Join(parts[:i+1], "."))
		}
		cur = next
	}
	raw, _ := cur["enum"].([]any)
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// TestUpstreamMachinesAndRegionsOffered holds the create forms to upstream's lists: every region
// (per platform region: EU access, KSA, SAP Cloud Infrastructure's one region each) and every
// machine type of each plan, in upstream's order, and what additional worker pools may use.
func TestUpstreamMachinesAndRegionsOffered(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	type want struct {
		regions, machines, pools []string
	}
	aws := want{upstreamAWSRegions, upstreamAWSRegular, upstreamAWSPools}
	awsEU := want{[]string{"eu-central-1"}, upstreamAWSRegular, upstreamAWSPools}
	azure := want{upstreamAzureRegions, upstreamAzureRegular, upstreamAzurePools}
	azureCH := want{[]string{"switzerlandnorth"}, upstreamAzureRegular, upstreamAzurePools}
	gcp := want{upstreamGCPRegions, upstreamGCPRegular, upstreamGCPPools}
	gcpKSA := want{[]string{"me-central2"}, upstreamGCPRegular, upstreamGCPPools}
	lite := want{upstreamAzureRegions, upstreamAzureLite, upstreamAzureLite}
	liteCH := want{[]string{"switzerlandnorth"}, upstreamAzureLite, upstreamAzureLite}
	scc := func(region string) want { return want{[]string{region}, upstreamSCC, upstreamSCC} }

	cases := []struct {
		plan, platformRegion string
		want                 want
	}{
		{AWSPlanName, "cf-eu10", aws}, {AWSPlanName, "cf-ch20", aws}, {AWSPlanName, "cf-eu11", awsEU},
		{PreviewPlanName, "cf-us10", aws}, {BuildRuntimeAWSPlanName, "cf-eu11", awsEU},
		{AzurePlanName, "cf-eu20", azure}, {AzurePlanName, "cf-eu11", azure}, {AzurePlanName, "cf-ch20", azureCH},
		{BuildRuntimeAzurePlanName, "cf-us21", azure}, {BuildRuntimeAzurePlanName, "cf-ch20", azureCH},
		{AzureLitePlanName, "cf-eu10", lite}, {AzureLitePlanName, "cf-ch20", liteCH},
		{GCPPlanName, "cf-in30", gcp}, {GCPPlanName, "cf-sa30", gcpKSA}, {BuildRuntimeGCPPlanName, "cf-eu10", gcp},
		{SapConvergedCloudPlanName, "cf-eu20", scc("eu-de-1")}, {SapConvergedCloudPlanName, "cf-eu10", scc("eu-de-2")},
		{SapConvergedCloudPlanName, "cf-us10", scc("na-us-1")}, {SapConvergedCloudPlanName, "cf-us20", scc("na-us-2")},
		{SapConvergedCloudPlanName, "cf-ap10", scc("ap-au-1")}, {SapConvergedCloudPlanName, "cf-jp10", scc("ap-jp-1")},
		{SapConvergedCloudPlanName, "cf-in30", scc("ap-ae-1")},
	}
	for _, tc := range cases {
		t.Run(tc.plan+"@"+tc.platformRegion, func(t *testing.T) {
			t.Parallel()
			plan, _ := c.PlanByName(tc.plan)
			e, err := c.entryFor(plan.ID, tc.platformRegion)
			if err != nil {
				t.Fatal(err)
			}
			for _, check := range []struct {
				path string
				want []string
			}{
				{"region", tc.want.regions},
				{"machineType", tc.want.machines},
				{"additionalWorkerNodePools.items.machineType", tc.want.pools},
			} {
				if got := schemaEnum(t, e.create.doc, check.path); !slices.Equal(got, check.want) {
					t.Errorf("%s offers %v\nupstream offers %v", check.path, got, check.want)
				}
			}
		})
	}
	// SAP Cloud Infrastructure is in no other platform region's catalog.
	for _, pr := range []string{"cf-eu11", "cf-ch20", "cf-sa30", "cf-eu01"} {
		if _, err := c.entryFor(SapConvergedCloudPlanID, pr); err == nil {
			t.Errorf("sap-converged-cloud is offered on %s; upstream offers it on its seven platform regions only", pr)
		}
	}
}

// TestPaidPlansDefaultMachineIsUpstreamsFirst: upstream's paid plans default to the first of
// their regularMachines (upstream-fidelity §1.3): AWS mi.large, Azure and azure_lite
// Standard_D2s_v5, GCP n2-standard-2, SAP Cloud Infrastructure g_c2_m8.
func TestPaidPlansDefaultMachineIsUpstreamsFirst(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for plan, machines := range map[string][]string{
		AWSPlanName: upstreamAWSRegular, PreviewPlanName: upstreamAWSRegular, BuildRuntimeAWSPlanName: upstreamAWSRegular,
		AzurePlanName: upstreamAzureRegular, BuildRuntimeAzurePlanName: upstreamAzureRegular, AzureLitePlanName: upstreamAzureLite,
		GCPPlanName: upstreamGCPRegular, BuildRuntimeGCPPlanName: upstreamGCPRegular, SapConvergedCloudPlanName: upstreamSCC,
	} {
		p, ok := c.PlanByName(plan)
		if !ok {
			t.Fatalf("no plan %s", plan)
		}
		if p.DefaultMachineType != machines[0] {
			t.Errorf("%s defaults to %s; upstream to %s, the first of its machines", plan, p.DefaultMachineType, machines[0])
		}
	}
}

// TestUpstreamRegionDisplayNamesAndZones holds every region's display name (the cockpit's label)
// and zones (what Gardener accepts) to upstream's providers data.
func TestUpstreamRegionDisplayNamesAndZones(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	abc := []string{"a", "b", "c"}
	cases := []struct {
		provider, region, display string
		zones                     []string
	}{
		{ProviderAWS, "eu-central-1", "Europe, Frankfurt", abc},
		{ProviderAWS, "eu-west-2", "Europe, London", abc},
		{ProviderAWS, "ca-central-1", "Canada, Montreal", []string{"a", "b", "d"}},
		{ProviderAWS, "sa-east-1", "Brazil, São Paulo", abc},
		{ProviderAWS, "us-east-1", "US East, N. Virginia", []string{"a", "b", "c", "d", "f"}},
		{ProviderAWS, "us-west-2", "US West, Oregon", []string{"a", "b", "c", "d"}},
		{ProviderAWS, "ap-northeast-1", "Asia Pacific, Tokyo", abc},
		{ProviderAWS, "ap-northeast-2", "Asia Pacific, Seoul", abc},
		{ProviderAWS, "ap-south-1", "Asia Pacific, Mumbai", abc},
		{ProviderAWS, "ap-southeast-1", "Asia Pacific, Singapore", abc},
		{ProviderAWS, "ap-southeast-2", "Asia Pacific, Sydney", abc},
		{ProviderAzure, "eastus", "US East, VA", nil},
		{ProviderAzure, "centralus", "US Central, IA", nil},
		{ProviderAzure, "westus2", "US West, WA", nil},
		{ProviderAzure, "uksouth", "UK South, London", nil},
		{ProviderAzure, "northeurope", "Europe, Ireland", nil},
		{ProviderAzure, "westeurope", "Europe, Netherlands", nil},
		{ProviderAzure, "japaneast", "Japan, Tokyo", nil},
		{ProviderAzure, "southeastasia", "Asia Pacific, Singapore", nil},
		{ProviderAzure, "australiaeast", "Australia, Sydney", nil},
		{ProviderAzure, "brazilsouth", "Brazil, São Paulo", nil},
		{ProviderAzure, "canadacentral", "Canada, Toronto", nil},
		{ProviderAzure, "switzerlandnorth", "Switzerland, Zurich", nil},
		{ProviderGCP, "europe-west3", "Europe, Frankfurt", abc},
		{ProviderGCP, "asia-south1", "India, Mumbai", abc},
		{ProviderGCP, "us-central1", "US Central, IA", abc},
		{ProviderGCP, "me-central2", "KSA, Dammam", abc},
		{ProviderGCP, "asia-northeast2", "Japan, Osaka", abc},
		{ProviderGCP, "me-west1", "Israel, Tel Aviv", abc},
		{ProviderGCP, "southamerica-east1", "Brazil, São Paulo", abc},
		{ProviderGCP, "australia-southeast1", "Australia, Sydney", abc},
		{ProviderGCP, "asia-northeast1", "Japan, Tokyo", abc},
		{ProviderGCP, "asia-southeast1", "Singapore, Jurong West", abc},
		{ProviderGCP, "us-west1", "North America, Oregon", abc},
		{ProviderGCP, "us-east4", "North America, Virginia", abc},
		{ProviderGCP, "europe-west4", "Europe, Netherlands", abc},
		{ProviderOpenStack, "eu-de-1", "", []string{"a", "b", "d"}},
		{ProviderOpenStack, "eu-de-2", "", []string{"a", "b"}},
		{ProviderOpenStack, "ap-au-1", "", []string{"a", "b"}},
		{ProviderOpenStack, "na-us-1", "", []string{"a", "b", "d"}},
		{ProviderOpenStack, "na-us-2", "", []string{"a", "b"}},
		{ProviderOpenStack, "ap-jp-1", "", []string{"a"}},
		{ProviderOpenStack, "ap-ae-1", "", []string{"a"}},
		// upstream-fidelity.md §6: full names region+letter (alicloud, regions ending in a digit)
		// and region-letter (gdch).
		{ProviderAlicloud, "ap-southeast-1", "Singapore", abc},
		{ProviderAlicloud, "eu-central-1", "Germany, Frankfurt", abc},
		{ProviderAlicloud, "eu-west-1", "UK, London", []string{"a", "b"}},
		{ProviderGDCH, "us-west16", "", abc},
	}
	names := map[string]string{} // provider/region → display name
	for _, e := range c.plans {
		for prov, o := range e.offers {
			for _, r := range o.regions {
				names[prov+"/"+r.Code] = r.DisplayName
			}
		}
	}
	for _, e := range c.regional {
		for _, v := range e {
			if v == nil {
				continue
			}
			for prov, o := range v.offers {
				for _, r := range o.regions {
					names[prov+"/"+r.Code] = r.DisplayName
				}
			}
		}
	}
	for _, tc := range cases {
		display := tc.region // upstream's SAP Cloud Infrastructure and GDCH regions show their bare code
		if tc.display != "" {
			display = tc.region + " (" + tc.display + ")"
		}
		if got := names[tc.provider+"/"+tc.region]; got != display {
			t.Errorf("%s %s: display name %q, upstream %q", tc.provider, tc.region, got, display)
		}
		var want []string
		for _, z := range tc.zones {
			want = append(want, fullZoneName(tc.provider, tc.region, z))
		}
		if tc.provider == ProviderAzure {
			want = []string{"1", "2", "3"}
		}
		if got := c.RegionZones(tc.provider, tc.region); !slices.Equal(got, want) {
			t.Errorf("%s %s: zones %v, upstream %v", tc.provider, tc.region, got, want)
		}
	}
}

// TestVersionAgnosticMachinesResolve: the names upstream offers without a generation resolve to
// a concrete machine type for the Runtime CR, every size of both families (mi.*, ri.*).
func TestVersionAgnosticMachinesResolve(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, m := range slices.Concat(sizes("mi.", awsSizes...), sizes("ri.", awsSizes...)) {
		got := c.ConcreteMachineType(ProviderAWS, m)
		if got == m || strings.HasPrefix(got, "mi.") || strings.HasPrefix(got, "ri.") {
			t.Errorf("%s resolves to %q, not a concrete machine type", m, got)
		}
		if _, size, _ := strings.Cut(m, "."); !strings.HasSuffix(got, "."+size) {
			t.Errorf("%s resolves to %q, another size", m, got)
		}
	}
}

// TestAlicloudAndGDCHPlansAsUpstream: upstream's plans alicloud, build-runtime-alicloud and gdch
// (upstream-today.md §4 IDs, upstream-fidelity.md §6 data): their regions, machines in order,
// defaults, zones as Gardener names them, the one-way upgrade, and gdch without networking,
// colocation or gVisor (root and pools).
func TestAlicloudAndGDCHPlansAsUpstream(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	ids := map[string]string{"alicloud": "9f2c3b4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",
		"build-runtime-alicloud": "72efa867-7b54-4d59-8df7-68f4759ff271", "gdch": "024e11fb-40df-4753-a992-24d136e2d15c"}
	ecs := sizes("ecs.g9i.", awsSizes...)
	gdc := []string{"n3-standard-2-gdc", "n3-standard-4-gdc", "n3-standard-8-gdc", "n3-standard-16-gdc", "n3-standard-32-gdc", "n3-standard-64-gdc"}
	cases := []struct {
		plan, provider, region, machine string
		regions, machines               []string
		min, max                        int
		upgradable                      []string
	}{
		{"alicloud", "alicloud", "eu-central-1", "ecs.g9i.large", []string{"ap-southeast-1", "eu-central-1", "eu-west-1"}, ecs, 3, 20,
			[]string{"build-runtime-alicloud"}},
		{"build-runtime-alicloud", "alicloud", "eu-central-1", "ecs.g9i.large", []string{"ap-southeast-1", "eu-central-1", "eu-west-1"}, ecs, 3, 20, nil},
		{"gdch", "gdch", "us-west16", "n3-standard-2-gdc", []string{"us-west16"}, gdc, 3, 10, nil},
	}
	for _, tc := range cases {
		plan, ok := c.PlanByName(tc.plan)
		if !ok || plan.ID != ids[tc.plan] {
			t.Errorf("plan %s: ID %q, upstream's %s", tc.plan, plan.ID, ids[tc.plan])
			continue
		}
		for _, pr := range []string{"cf-eu10", "cf-eu20", "cf-us30", "cf-eu40", "cf-eu11", "cf-ch20"} {
			e, err := c.entryFor(plan.ID, pr)
			if err != nil {
				t.Errorf("%s on %s: %v (upstream offers it on every platform region)", tc.plan, pr, err)
				continue
			}
			if got := schemaEnum(t, e.create.doc, "region"); !slices.Equal(got, tc.regions) {
				t.Errorf("%s on %s: regions %v, upstream %v", tc.plan, pr, got, tc.regions)
			}
			if got := schemaEnum(t, e.create.doc, "machineType"); !slices.Equal(got, tc.machines) {
				t.Errorf("%s on %s: machines %v, upstream %v", tc.plan, pr, got, tc.machines)
			}
		}
		r, err := c.Resolve(plan.ID, "cf-eu10", ProvisioningParameters{Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Provider != tc.provider || r.ProviderRegion != tc.region || r.MachineType != tc.machine ||
			r.AutoScalerMin != tc.min || r.AutoScalerMax != tc.max || r.ZonesCount != 3 {
			t.Errorf("%s defaults: %s %s %s %d..%d, %d zones", tc.plan, r.Provider, r.ProviderRegion, r.MachineType,
				r.AutoScalerMin, r.AutoScalerMax, r.ZonesCount)
		}
		if !slices.Equal(plan.UpgradableTo, tc.upgradable) {
			t.Errorf("%s upgradable to %v, upstream %v", tc.plan, plan.UpgradableTo, tc.upgradable)
		}
	}
	for provider, want := range map[string][]string{
		"alicloud/eu-central-1": {"eu-central-1a", "eu-central-1b", "eu-central-1c"},
		"alicloud/eu-west-1":    {"eu-west-1a", "eu-west-1b"},
		"gdch/us-west16":        {"us-west16-a", "us-west16-b", "us-west16-c"},
	} {
		p, region, _ := strings.Cut(provider, "/")
		if got := c.RegionZones(p, region); !slices.Equal(got, want) {
			t.Errorf("%s zones %v, upstream %v", provider, got, want)
		}
	}

	gdch, _ := c.PlanByName("gdch")
	for _, kind := range []string{"create", "update"} {
		raw, _ := c.CreateSchema(gdch.ID)
		if kind == "update" {
			raw, _ = c.UpdateSchema(gdch.ID)
		}
		for _, disabled := range []string{`"networking"`, `"colocateControlPlane"`, `"gvisor"`} {
			if strings.Contains(string(raw), disabled) {
				t.Errorf("gdch %s schema offers %s; upstream disables it", kind, disabled)
			}
		}
	}
	for _, params := range []string{`{"name":"x","networking":{"nodes":"10.250.0.0/16"}}`, `{"name":"x","colocateControlPlane":true}`,
		`{"name":"x","gvisor":{"enabled":true}}`} {
		if _, err := c.ValidateParameters(gdch.ID, "cf-eu10", json.RawMessage(params)); err == nil {
			t.Errorf("gdch accepted %s", params)
		}
	}
	ali, _ := c.PlanByName("alicloud")
	if _, err := c.ValidateParameters(ali.ID, "cf-eu10", json.RawMessage(`{"name":"x","region":"eu-west-1","networking":{"nodes":"10.250.0.0/16"},"colocateControlPlane":true}`)); err != nil {
		t.Errorf("alicloud refused networking and colocation: %v", err)
	}
}
