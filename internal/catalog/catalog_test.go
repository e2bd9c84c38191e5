package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// loadDefault compiles the embedded catalog once; a Catalog is immutable, so parallel tests
// may share it.
var loadDefault = sync.OnceValues(func() (*Catalog, error) { return Load("") })

func defaultCatalog(t *testing.T) *Catalog {
	t.Helper()
	c, err := loadDefault()
	if err != nil {
		t.Fatalf("Load embedded catalog: %v", err)
	}
	return c
}

func TestServicesDefaultEnabledPlans(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)

	services, err := c.Services(DefaultEnabledPlans())
	if err != nil {
		t.Fatalf("Services: %v", err)
	}
	if len(services) != 1 {
		t.Fatalf("got %d services, want 1", len(services))
	}
	s := services[0]
	if ServiceID != "47c9dcbf-ff30-448e-ab36-d3bad66ba281" || s.ID != ServiceID || s.Name != "kymaruntime" {
		t.Errorf("service id/name = %s/%s", s.ID, s.Name)
	}
	if s.Bindable || !s.InstancesRetrievable || s.PlanUpdatable {
		t.Errorf("bindable=%v instances_retrievable=%v plan_updateable=%v, want false/true/false",
			s.Bindable, s.InstancesRetrievable, s.PlanUpdatable)
	}
	if !slices.Equal(s.Tags, []string{"SAP", "Kyma"}) {
		t.Errorf("tags = %v", s.Tags)
	}
	if s.Metadata == nil || s.Metadata.DisplayName != "Kyma Environment" || s.Metadata.ProviderDisplayName != "SAP" {
		t.Errorf("metadata = %+v", s.Metadata)
	}

	want := map[string]string{
		"azure":      "4deee563-e5ec-4731-b9b1-53b42d855f0c",
		"gcp":        "ca6e5357-707f-4565-bbbd-b3ab732597c6",
		"azure_lite": "8cb22518-aa26-44c5-91a0-e669ec9bf443",
		"trial":      "7d55d31d-35ae-4438-bf13-6ffdfa107d9f",
		"aws":        "361c511f-f939-4621-b228-d0fb79a1fe15",
		// upstream-today.md section 4
		"build-runtime-aws":   "6aae0ff3-89f7-4f12-86de-51466145422e",
		"build-runtime-gcp":   "a310cd6b-6452-45a0-935d-d24ab53f9eba",
		"build-runtime-azure": "499244b4-1bef-48c9-be68-495269899f8e",
	}
	got := map[string]string{}
	for _, p := range s.Plans {
		got[p.Name] = p.ID
	}
	if len(got) != len(want) || len(s.Plans) != len(want) {
		t.Fatalf("plans = %v, want %v", got, want)
	}
	for name, id := range want {
		if got[name] != id {
			t.Errorf("plan %s id = %q, want %q", name, got[name], id)
		}
	}

	// The catalog must survive a JSON round trip: it is what brokerapi serves.
	if _, err := json.Marshal(services); err != nil {
		t.Errorf("marshal catalog: %v", err)
	}
}

func TestPlanIDsAreTheContract(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)

	tests := []struct {
		name, id, provider string
	}{
		{name: "azure", id: "4deee563-e5ec-4731-b9b1-53b42d855f0c", provider: ProviderAzure},
		{name: "aws", id: "361c511f-f939-4621-b228-d0fb79a1fe15", provider: ProviderAWS},
		{name: "gcp", id: "ca6e5357-707f-4565-bbbd-b3ab732597c6", provider: ProviderGCP},
		{name: "azure_lite", id: "8cb22518-aa26-44c5-91a0-e669ec9bf443", provider: ProviderAzure},
		{name: "trial", id: "7d55d31d-35ae-4438-bf13-6ffdfa107d9f", provider: ProviderAzure},
		{name: "free", id: "b1a5764e-2ea1-4f95-94c0-2b4538b37b55", provider: ""},
		{name: "preview", id: "5cb3d976-b85c-42ea-a636-79cadda109a9", provider: ProviderAWS},
		{name: "sap-converged-cloud", id: "03b812ac-c991-4528-b5bd-08b303523a63", provider: ProviderOpenStack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, ok := c.PlanByID(tt.id)
			if !ok {
				t.Fatalf("PlanByID(%s) not found", tt.id)
			}
			if p.Name != tt.name || p.Provider != tt.provider {
				t.Errorf("plan = %s on %q, want %s on %q", p.Name, p.Provider, tt.name, tt.provider)
			}
			if byName, ok := c.PlanByName(tt.name); !ok || byName.ID != tt.id {
				t.Errorf("PlanByName(%s) = %s, %v", tt.name, byName.ID, ok)
			}
		})
	}
}

func TestPlanDefaults(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)

	tests := []struct {
		name                 string
		planID               string
		min, max             int
		defaultRegion        string
		zones                int
		lite, trial, shared  bool
		onePerGlobalAccount  bool
		lifetimeDays         int
		basicForm            bool
		wantDefaultNodeCount int
	}{
		{name: "azure", planID: AzurePlanID, min: 3, max: 300, defaultRegion: "eastus", zones: 3, wantDefaultNodeCount: 3},
		{name: "aws", planID: AWSPlanID, min: 3, max: 300, defaultRegion: "eu-central-1", zones: 3, wantDefaultNodeCount: 3},
		{name: "gcp", planID: GCPPlanID, min: 3, max: 300, defaultRegion: "europe-west3", zones: 3, wantDefaultNodeCount: 3},
		{name: "azure_lite", planID: AzureLitePlanID, min: 2, max: 40, defaultRegion: "eastus", zones: 1, lite: true, wantDefaultNodeCount: 3},
		{name: "trial", planID: TrialPlanID, min: 1, max: 1, zones: 1, trial: true, shared: true, onePerGlobalAccount: true, lifetimeDays: 14, basicForm: true, wantDefaultNodeCount: 1},
		{name: "free", planID: FreePlanID, min: 1, max: 1, zones: 1, onePerGlobalAccount: true, lifetimeDays: 30, basicForm: true, wantDefaultNodeCount: 1},
		{name: "preview", planID: PreviewPlanID, min: 3, max: 300, defaultRegion: "eu-central-1", zones: 3, wantDefaultNodeCount: 3},
		{name: "sap-converged-cloud", planID: SapConvergedCloudPlanID, min: 3, max: 300, defaultRegion: "eu-de-1", zones: 3, shared: true, wantDefaultNodeCount: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, _ := c.PlanByID(tt.planID)
			if p.AutoScalerMin != tt.min || p.AutoScalerMax != tt.max {
				t.Errorf("autoscaler bounds %d..%d, want %d..%d", p.AutoScalerMin, p.AutoScalerMax, tt.min, tt.max)
			}
			if p.DefaultRegion != tt.defaultRegion || p.DefaultZonesCount != tt.zones || p.DefaultNodeCount != tt.wantDefaultNodeCount {
				t.Errorf("defaults region=%q zones=%d nodes=%d", p.DefaultRegion, p.DefaultZonesCount, p.DefaultNodeCount)
			}
			if p.Lite != tt.lite || p.Trial != tt.trial || p.SharedPool != tt.shared || p.OnePerGlobalAccount != tt.onePerGlobalAccount || p.BasicForm != tt.basicForm {
				t.Errorf("flags lite=%v trial=%v shared=%v onePerGA=%v basic=%v", p.Lite, p.Trial, p.SharedPool, p.OnePerGlobalAccount, p.BasicForm)
			}
			if got := int(p.Lifetime.Hours() / 24); got != tt.lifetimeDays {
				t.Errorf("lifetime %d days, want %d", got, tt.lifetimeDays)
			}
		})
	}
}

func TestServicesEnabledPlans(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)

	tests := []struct {
		name      string
		enabled   []string
		wantPlans []string
		wantErr   string
	}{
		{name: "all plans, order kept", enabled: []string{"free", "azure", "aws", "gcp", "azure_lite", "trial", "preview", "sap-converged-cloud"},
			wantPlans: []string{"free", "azure", "aws", "gcp", "azure_lite", "trial", "preview", "sap-converged-cloud"}},
		{name: "spaces and duplicates ignored", enabled: []string{" azure", "azure", ""}, wantPlans: []string{"azure"}},
		{name: "unknown plan named", enabled: []string{"azure", "azur"}, wantErr: `"azur"`},
		{name: "nothing enabled", enabled: nil, wantErr: "none given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			services, err := c.Services(tt.enabled)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Services: %v", err)
			}
			var got []string
			for _, p := range services[0].Plans {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.wantPlans) {
				t.Errorf("plans = %v, want %v", got, tt.wantPlans)
			}
		})
	}
}

func TestServicesUnknownPlanWrapsErrUnknownPlan(t *testing.T) {
	t.Parallel()
	_, err := defaultCatalog(t).Services([]string{"mars"})
	if !errors.Is(err, ErrUnknownPlan) {
		t.Errorf("err = %v, want ErrUnknownPlan", err)
	}
}

// Every plan's schema follows KEB's form conventions, and the catalog serves exactly the
// document validation uses.
func TestPlanSchemasFollowFormConventions(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	services, err := c.Services(sortedKeys(planIDs))
	if err != nil {
		t.Fatalf("Services: %v", err)
	}
	for _, sp := range services[0].Plans {
		t.Run(sp.Name, func(t *testing.T) {
			t.Parallel()
			schema := sp.Schemas.Instance.Create.Parameters
			if schema["$schema"] != "http://json-schema.org/draft-04/schema#" || schema["type"] != "object" {
				t.Errorf("$schema/type = %v/%v", schema["$schema"], schema["type"])
			}
			if schema["_show_form_view"] != true || schema["_load_current_config"] != true {
				t.Errorf("_show_form_view/_load_current_config = %v/%v", schema["_show_form_view"], schema["_load_current_config"])
			}
			if schema["additionalProperties"] != false {
				t.Errorf("additionalProperties = %v", schema["additionalProperties"])
			}
			if !slices.Equal(asStrings(schema["required"]), []string{"name"}) {
				t.Errorf("required = %v", schema["required"])
			}
			checkControlsOrder(t, "", schema)

			props := schema["properties"].(map[string]any)
			name := props["name"].(map[string]any)
			if name["pattern"] != "^[a-zA-Z0-9-]*$" || jsonInt(name["minLength"]) != 1 || jsonInt(name["maxLength"]) != 64 {
				t.Errorf("name schema = %v", name)
			}
			// The cockpit prefills the name from the subaccount, as upstream asks it to.
			if tmpl, _ := name["_BTPdefaultTemplate"].(map[string]any); !slices.Equal(asStrings(tmpl["elements"]), []string{"saSubdomain"}) {
				t.Errorf("name _BTPdefaultTemplate = %v", name["_BTPdefaultTemplate"])
			}
			// A trial's region is hidden (as upstream's trial form); every other plan shows it.
			if region, ok := props["region"].(map[string]any); ok || sp.ID != TrialPlanID {
				if _, ok := region["_enumDisplayName"].(map[string]any); !ok || len(asStrings(region["enum"])) == 0 {
					t.Errorf("region schema lacks enum/_enumDisplayName: %v", region)
				}
			}

			served, _ := json.Marshal(schema)
			validated, _ := c.CreateSchema(sp.ID)
			if !jsonEqual(t, served, validated) {
				t.Errorf("catalog schema and validation schema differ")
			}
		})
	}
}

// checkControlsOrder asserts, at every level, that _controlsOrder lists exactly the properties
// (for a oneOf: those of all alternatives), and that enums carry display names where forms show them.
func checkControlsOrder(t *testing.T, path string, schema map[string]any) {
	t.Helper()
	props, hasProps := schema["properties"].(map[string]any)
	branches, hasOneOf := schema["oneOf"].([]any)
	if hasProps || hasOneOf {
		want := map[string]bool{}
		for k := range props {
			want[k] = true
		}
		for _, b := range branches {
			for k := range b.(map[string]any)["properties"].(map[string]any) {
				want[k] = true
			}
		}
		order := asStrings(schema["_controlsOrder"])
		got := map[string]bool{}
		for _, k := range order {
			if got[k] {
				t.Errorf("%s: _controlsOrder lists %q twice", path, k)
			}
			got[k] = true
		}
		if len(got) != len(want) {
			t.Errorf("%s: _controlsOrder %v, properties %v", path, order, sortedKeys(want))
		}
		for k := range want {
			if !got[k] {
				t.Errorf("%s: _controlsOrder %v misses %q", path, order, k)
			}
		}
	}
	for k, v := range props {
		if m, ok := v.(map[string]any); ok {
			checkControlsOrder(t, path+"."+k, m)
		}
	}
	for _, b := range branches {
		checkControlsOrder(t, path+"(oneOf)", b.(map[string]any))
	}
	if items, ok := schema["items"].(map[string]any); ok {
		checkControlsOrder(t, path+"[]", items)
	}
}

func asStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			out = append(out, x.(string))
		}
	case []string:
		out = v
	}
	return out
}

func jsonInt(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestPlanSchemaProperties(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)

	tests := []struct {
		name       string
		planID     string
		wantProps  []string
		wantRegion []string
	}{
		{name: "azure full form", planID: AzurePlanID,
			// upstream's order (plans_schema.go), keb's own parameters after it
			wantProps: []string{"name", "region", "colocateControlPlane", "machineType", "autoScalerMin", "autoScalerMax",
				"zonesCount", "additionalWorkerNodePools", "modules", "networking", "oidc", "administrators",
				"ingressFiltering", "components", "kymaVersion", "zones", "maxSurge", "maxUnavailable", "volumeSizeGb"}},
		{name: "lite has no zone choice, no ingress filtering (upstream's shipped ingressFilteringPlans)", planID: AzureLitePlanID,
			wantProps: []string{"name", "region", "colocateControlPlane", "machineType", "autoScalerMin", "autoScalerMax",
				"additionalWorkerNodePools", "modules", "networking", "oidc", "administrators",
				"components", "kymaVersion", "maxSurge", "maxUnavailable", "volumeSizeGb"}},
		{name: "trial basic form, trial regions hidden", planID: TrialPlanID,
			wantProps:  []string{"name", "modules", "oidc", "administrators"},
			wantRegion: []string{"europe", "us", "asia"}},
		{name: "free basic form with regions of aws and azure", planID: FreePlanID,
			wantProps: []string{"name", "region", "modules", "oidc", "administrators"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := c.CreateSchema(tt.planID)
			if err != nil {
				t.Fatal(err)
			}
			schema, _ := decodeSchema(raw)
			if got := asStrings(schema["_controlsOrder"]); !slices.Equal(got, tt.wantProps) {
				t.Errorf("_controlsOrder = %v, want %v", got, tt.wantProps)
			}
			props := schema["properties"].(map[string]any)
			if tt.planID == TrialPlanID {
				// A trial's region and provider are hidden: checked, not shown (as upstream).
				props = c.plans[TrialPlanID].hidden.doc["properties"].(map[string]any)
				if props["provider"] == nil {
					t.Errorf("trial has no hidden provider parameter: %v", props)
				}
			}
			region := props["region"].(map[string]any)
			regions := asStrings(region["enum"])
			if tt.wantRegion != nil && !slices.Equal(regions, tt.wantRegion) {
				t.Errorf("region enum = %v, want %v", regions, tt.wantRegion)
			}
			if tt.planID == FreePlanID && (!slices.Contains(regions, "eu-central-1") || !slices.Contains(regions, "westeurope")) {
				t.Errorf("free region enum = %v, want aws and azure regions", regions)
			}
		})
	}
}

func TestPlansSorted(t *testing.T) {
	t.Parallel()
	plans := defaultCatalog(t).Plans()
	var names []string
	for _, p := range plans {
		names = append(names, p.Name)
	}
	if len(names) != len(planIDs) || !sort.StringsAreSorted(names) {
		t.Errorf("Plans() = %v", names)
	}
}
