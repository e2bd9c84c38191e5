package catalog

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestUpdateSchemas: each plan's update schema, as served, lists exactly what can change on a
// running runtime of that plan, with no defaults, and is what ValidateUpdate enforces; plans with
// upgradableToPlans say plan_updateable.
func TestUpdateSchemas(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	services, err := c.Services(sortedKeys(planIDs))
	if err != nil {
		t.Fatal(err)
	}
	wantProps := map[string][]string{
		TrialPlanName: {"name", "oidc", "administrators"},
		FreePlanName:  {"name", "oidc", "administrators"},
		// ingressFiltering as upstream's shipped ingressFilteringPlans; accessControlList and
		// additionalVolumeSizeGi on no plan out of the box; gvisor is accepted, not shown, as upstream's shipped gvisorEnabled.
		AzurePlanName: {"name", "machineType", "autoScalerMin", "autoScalerMax", "additionalWorkerNodePools",
			"oidc", "administrators", "ingressFiltering", "maxSurge", "maxUnavailable"},
		AzureLitePlanName: {"name", "machineType", "autoScalerMin", "autoScalerMax", "additionalWorkerNodePools",
			"oidc", "administrators", "maxSurge", "maxUnavailable"},
	}
	wantUpdatable := map[string]bool{TrialPlanName: true, AzureLitePlanName: true, AWSPlanName: true, AzurePlanName: true, GCPPlanName: true,
		AlicloudPlanName: true}
	for _, sp := range services[0].Plans {
		schema := sp.Schemas.Instance.Update.Parameters
		// _load_current_config: the cockpit's update dialog opens with the instance's current values.
		if schema["$schema"] != draft04 || schema["additionalProperties"] != false || schema["_show_form_view"] != true || schema["_load_current_config"] != true {
			t.Errorf("%s: update schema header %v", sp.Name, schema)
		}
		checkControlsOrder(t, sp.Name, schema)
		order := asStrings(schema["_controlsOrder"])
		if want, ok := wantProps[sp.Name]; ok && !slices.Equal(order, want) {
			t.Errorf("%s: update schema properties %v, want %v", sp.Name, order, want)
		}
		for _, fixed := range fixedParameters {
			if slices.Contains(order, fixed) {
				t.Errorf("%s: update schema offers %s", sp.Name, fixed)
			}
		}
		for name, p := range schema["properties"].(map[string]any) {
			if _, ok := p.(map[string]any)["default"]; ok {
				t.Errorf("%s: update schema property %s has a default", sp.Name, name)
			}
		}
		served, _ := json.Marshal(schema)
		validated, _ := c.UpdateSchema(sp.ID)
		if !jsonEqual(t, served, validated) {
			t.Errorf("%s: served and validating update schemas differ", sp.Name)
		}
		if sp.PlanUpdatable == nil || *sp.PlanUpdatable != wantUpdatable[sp.Name] {
			t.Errorf("%s: plan_updateable %v, want %v", sp.Name, sp.PlanUpdatable, wantUpdatable[sp.Name])
		}
	}
}

func TestValidateUpdate(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	stored := func(raw string) ProvisioningParameters {
		var p ProvisioningParameters
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		from, to string
		stored   string
		region   string
		// platform is the instance's platform region (default cf-eu10).
		platform string
		raw      string
		// wantInError are substrings of the error; none means valid.
		wantInError []string
		wantPlanErr bool
		check       func(t *testing.T, p ProvisioningParameters)
	}{
		{name: "scale up", raw: `{"autoScalerMax":301}`, wantInError: []string{"autoScalerMax must be at most 300"}},
		{name: "machine type and max", stored: `{"name":"x","autoScalerMin":4}`, raw: `{"machineType":"Standard_D8s_v5","autoScalerMax":10}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if p.Name != "x" || *p.MachineType != "Standard_D8s_v5" || *p.AutoScalerMin != 4 || *p.AutoScalerMax != 10 {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "nothing sent keeps everything", stored: `{"name":"x","autoScalerMax":9}`, raw: ``,
			check: func(t *testing.T, p ProvisioningParameters) {
				if p.Name != "x" || *p.AutoScalerMax != 9 || p.AutoScalerMin != nil {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "name", stored: `{"name":"x"}`, raw: `{"name":"y"}`, check: func(t *testing.T, p ProvisioningParameters) {
			if p.Name != "y" {
				t.Errorf("merged %+v", p)
			}
		}},
		{name: "region", raw: `{"region":"westeurope"}`, wantInError: []string{"region cannot be changed"}},
		{name: "networking", raw: `{"networking":{"nodes":"10.250.0.0/16"}}`, wantInError: []string{"networking cannot be changed"}},
		{name: "create-only parameter", raw: `{"zonesCount":2}`, wantInError: []string{"zonesCount is not a supported parameter"}},
		{name: "no defaults fill in", raw: `{}`, check: func(t *testing.T, p ProvisioningParameters) {
			if p.MachineType != nil || p.AutoScalerMin != nil {
				t.Errorf("defaults were stored: %+v", p)
			}
		}},
		{name: "min above stored max", stored: `{"name":"x","autoScalerMax":5}`, raw: `{"autoScalerMin":6}`,
			wantInError: []string{"autoScalerMin must not be greater than autoScalerMax (6 > 5, the runtime's current value)"}},
		{name: "max below stored min", stored: `{"name":"x","autoScalerMin":8}`, raw: `{"autoScalerMax":5}`,
			wantInError: []string{"autoScalerMax must not be less than autoScalerMin (5 < 8, the runtime's current value)"}},
		{name: "max below default min", raw: `{"autoScalerMax":2}`, wantInError: []string{"autoScalerMax must be at least 3"}},
		{name: "both sent, crossed", raw: `{"autoScalerMin":9,"autoScalerMax":4}`, wantInError: []string{"autoScalerMin must not be greater than autoScalerMax (9 > 4)"}},
		{name: "trial has no autoscaler", from: TrialPlanID, stored: `{"name":"t"}`, raw: `{"autoScalerMax":2}`,
			wantInError: []string{"autoScalerMax is not a supported parameter"}},
		{name: "an AWS trial to aws drops the trial's provider", from: TrialPlanID, to: AWSPlanID, stored: `{"name":"t","provider":"AWS"}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if p.Provider != nil || p.Region == nil || *p.Region != "eu-central-1" {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "a trial's provider cannot change", from: TrialPlanID, stored: `{"name":"t"}`, raw: `{"provider":"GCP"}`,
			wantInError: []string{"provider cannot be changed on a running runtime"}},
		{name: "a runtime in a region its platform region no longer offers still updates", platform: "cf-eu11", region: "eu-west-2",
			from: AWSPlanID, stored: `{"name":"x","region":"eu-west-2"}`, raw: `{"autoScalerMax":30}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if *p.Region != "eu-west-2" || *p.AutoScalerMax != 30 {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "trial administrators", from: TrialPlanID, stored: `{"name":"t"}`, raw: `{"administrators":["a@example.com"]}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if !slices.Equal(p.Administrators, []string{"a@example.com"}) || p.Region != nil {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "oidc replaced", stored: `{"name":"x","oidc":{"clientID":"a","issuerURL":"https://a.example.com"}}`,
			raw: `{"oidc":{"clientID":"b","issuerURL":"https://b.example.com","groupsClaim":"groups"}}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if p.OIDC.ClientID != "b" || p.OIDC.GroupsClaim != "groups" {
					t.Errorf("oidc %+v", p.OIDC)
				}
			}},
		{name: "oidc over http", raw: `{"oidc":{"clientID":"b","issuerURL":"http://b.example.com"}}`, wantInError: []string{"https"}},
		{name: "trial to aws", from: TrialPlanID, to: AWSPlanID, stored: `{"name":"t"}`, raw: `{"autoScalerMax":5}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if *p.Region != "eu-central-1" || *p.AutoScalerMax != 5 || p.Name != "t" {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "trial in asia to gcp", platform: "cf-eu20", from: TrialPlanID, to: GCPPlanID, stored: `{"name":"t","region":"asia"}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if *p.Region != "asia-south1" {
					t.Errorf("region %v", *p.Region)
				}
			}},
		{name: "lite to azure keeps the region", from: AzureLitePlanID, to: AzurePlanID, region: "westeurope",
			stored: `{"name":"l","machineType":"Standard_D4s_v5"}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if *p.Region != "westeurope" || *p.MachineType != "Standard_D4s_v5" {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "lite minimum below azure's", from: AzureLitePlanID, to: AzurePlanID, region: "eastus",
			stored: `{"name":"l","autoScalerMin":2}`, wantInError: []string{"autoScalerMin must be at least 3"}},
		{name: "lite minimum raised with the plan change", from: AzureLitePlanID, to: AzurePlanID, region: "eastus",
			stored: `{"name":"l","autoScalerMin":2}`, raw: `{"autoScalerMin":3}`},
		// Upstream accepts a roll-out change in an update and writes it to the Kyma worker pool.
		{name: "roll-out", stored: `{"name":"x","maxSurge":3}`, raw: `{"maxSurge":1,"maxUnavailable":2}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if p.MaxSurge == nil || *p.MaxSurge != 1 || p.MaxUnavailable == nil || *p.MaxUnavailable != 2 {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "roll-out that could never proceed", raw: `{"maxSurge":0,"maxUnavailable":0}`, wantInError: []string{"maxSurge"}},
		{name: "roll-out on a trial", from: TrialPlanID, stored: `{"name":"t"}`, raw: `{"maxSurge":1}`,
			wantInError: []string{"maxSurge is not available on plan trial"}},
		// Administrators stored before keb asked for e-mail addresses (upstream takes any string)
		// do not block an update, sent again unchanged or not sent at all; new ones must be e-mails.
		{name: "stored non-e-mail administrators, other change", stored: `{"name":"x","administrators":["admin","ops team"]}`,
			raw: `{"autoScalerMax":30}`, check: func(t *testing.T, p ProvisioningParameters) {
				if !slices.Equal(p.Administrators, []string{"admin", "ops team"}) || *p.AutoScalerMax != 30 {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "stored non-e-mail administrators sent unchanged", stored: `{"name":"x","administrators":["admin","ops team"]}`,
			raw: `{"administrators":["admin","ops team"],"autoScalerMax":30}`, check: func(t *testing.T, p ProvisioningParameters) {
				if !slices.Equal(p.Administrators, []string{"admin", "ops team"}) {
					t.Errorf("merged %+v", p)
				}
			}},
		{name: "stored non-e-mail administrators changed", stored: `{"name":"x","administrators":["admin"]}`,
			raw: `{"administrators":["admin","root"]}`, wantInError: []string{"administrators"}},
		{name: "azure to trial", to: TrialPlanID, wantPlanErr: true, wantInError: []string{"plan azure cannot change to trial: a azure instance can change to build-runtime-azure"}},
		{name: "trial to free", from: TrialPlanID, to: FreePlanID, stored: `{"name":"t"}`, wantPlanErr: true,
			wantInError: []string{"plan trial cannot change to free: a trial instance can change to aws, azure, gcp"}},
		{name: "lite to aws", from: AzureLitePlanID, to: AWSPlanID, wantPlanErr: true, wantInError: []string{"azure_lite", "aws"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			from := tt.from
			if from == "" {
				from = AzurePlanID
			}
			region := tt.region
			if region == "" {
				region = "eastus"
			}
			st := tt.stored
			if st == "" {
				st = `{"name":"x"}`
			}
			platform := tt.platform
			if platform == "" {
				platform = "cf-eu10"
			}
			p, err := c.ValidateUpdate(UpdateRequest{FromPlanID: from, ToPlanID: tt.to, PlatformRegion: platform,
				ProviderRegion: region, Stored: stored(st), Raw: json.RawMessage(tt.raw)})
			if len(tt.wantInError) == 0 {
				if err != nil {
					t.Fatalf("ValidateUpdate: %v", err)
				}
				if tt.check != nil {
					tt.check(t, p)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateUpdate accepted it: %+v", p)
			}
			if got := errors.Is(err, ErrPlanNotUpgradable); got != tt.wantPlanErr {
				t.Errorf("plan error %v, want %v: %v", got, tt.wantPlanErr, err)
			}
			var verr *ValidationError
			if !tt.wantPlanErr && !errors.As(err, &verr) {
				t.Errorf("want a *ValidationError, got %T %v", err, err)
			}
			for _, want := range tt.wantInError {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestLoadChecksUpgradableToPlans(t *testing.T) {
	t.Parallel()
	path := writeFile(t, minimalPlansFile+"    upgradableToPlans: [azure, gcp]\n")
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), `plans.azure.upgradableToPlans: "azure" is the plan itself`) ||
		!strings.Contains(err.Error(), `plans.azure.upgradableToPlans: "gcp" is not described under plans`) {
		t.Fatalf("Load: %v", err)
	}
}

// TestGatedParametersStoredOnAPlanNoLongerOffering: out of the box keb offers ingressFiltering,
// accessControlList and additionalVolumeSizeGi as upstream's shipped defaults do (ingress filtering
// on aws, azure and gcp; the others nowhere). An instance that stored them before (an operator's
// earlier plans file, upstream's test settings) keeps them: an update that leaves them as they are
// is accepted and keeps them, an update that changes one is refused as on any plan without it,
// and a new provisioning may not set them.
func TestGatedParametersStoredOnAPlanNoLongerOffering(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	const stored = `{"name":"x","ingressFiltering":true,"accessControlList":{"allowedCIDRs":["203.0.113.0/24"]},"additionalVolumeSizeGi":10}`
	var s ProvisioningParameters
	if err := json.Unmarshal([]byte(stored), &s); err != nil {
		t.Fatal(err)
	}
	for _, planID := range []string{AzureLitePlanID, PreviewPlanID, SapConvergedCloudPlanID, BuildRuntimeAWSPlanID, AzurePlanID} {
		plan, _ := c.PlanByID(planID)
		region := "eu-de-2"
		if plan.Provider != ProviderOpenStack {
			region = plan.DefaultRegion
		}
		update := func(raw string) (ProvisioningParameters, error) {
			return c.ValidateUpdate(UpdateRequest{FromPlanID: planID, PlatformRegion: "cf-eu10", ProviderRegion: region,
				Stored: s, Raw: json.RawMessage(raw)})
		}
		for _, raw := range []string{`{"autoScalerMax":30}`, ``, stored} {
			got, err := update(raw)
			if err != nil {
				t.Errorf("%s: update %s of an instance with stored gated parameters refused: %v", plan.Name, raw, err)
				continue
			}
			if got.IngressFiltering == nil || !*got.IngressFiltering || got.AccessControlList == nil ||
				!slices.Equal(got.AccessControlList.AllowedCIDRs, []string{"203.0.113.0/24"}) ||
				got.AdditionalVolumeSizeGi == nil || *got.AdditionalVolumeSizeGi != 10 {
				t.Errorf("%s: update %s lost a stored gated parameter: %+v", plan.Name, raw, got)
			}
		}
		changes := map[string]string{
			paramAccessControlList: `{"accessControlList":{"allowedCIDRs":[]}}`,
			paramAdditionalVolume:  `{"additionalVolumeSizeGi":20}`,
		}
		if !plan.IngressFiltering {
			changes[paramIngressFiltering] = `{"ingressFiltering":false}`
		}
		for param, raw := range changes {
			_, err := update(raw)
			var verr *ValidationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), param+" is not available on plan "+plan.Name) {
				t.Errorf("%s: update %s changing a gated parameter the plan does not offer: %v", plan.Name, raw, err)
			}
		}
		if _, err := c.ValidateParameters(planID, "cf-eu10", json.RawMessage(stored)); err == nil {
			t.Errorf("%s: a new provisioning with gated parameters the plan does not offer was accepted", plan.Name)
		}
	}
}
