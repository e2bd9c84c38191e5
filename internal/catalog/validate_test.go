package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestValidateParameters(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)

	tests := []struct {
		name           string
		planID         string
		platformRegion string
		raw            string
		// wantFields are the offending fields, in order; nil means valid.
		wantFields []string
		// wantInError are substrings of Error().
		wantInError []string
		check       func(t *testing.T, p ProvisioningParameters)
	}{
		{name: "minimal", raw: `{"name":"x"}`, check: func(t *testing.T, p ProvisioningParameters) {
			if p.Name != "x" || p.Region != nil || p.AutoScalerMin != nil || p.Modules != nil {
				t.Errorf("params = %+v, want only the name", p)
			}
		}},
		{name: "nil raw requires name", raw: "", wantFields: []string{"name"}, wantInError: []string{"invalid parameters: name is required"}},
		{name: "empty object requires name", raw: `{}`, wantFields: []string{"name"}},
		{name: "null requires name", raw: `null`, wantFields: []string{"name"}},
		{name: "not an object", raw: `["x"]`, wantFields: []string{""}, wantInError: []string{"must be an object"}},
		{name: "malformed JSON", raw: `{"name":`, wantFields: []string{""}, wantInError: []string{"valid JSON"}},
		{name: "name wrong type", raw: `{"name":3}`, wantFields: []string{"name"}, wantInError: []string{"name must be a string"}},
		{name: "empty name", raw: `{"name":""}`, wantFields: []string{"name"}, wantInError: []string{"name must not be empty"}},
		{name: "bad name pattern", raw: `{"name":"my cluster!"}`, wantFields: []string{"name"}, wantInError: []string{"letters, digits and hyphens"}},
		{name: "name length 64 ok", raw: `{"name":"` + strings.Repeat("a", 64) + `"}`},
		{name: "name length 65", raw: `{"name":"` + strings.Repeat("a", 65) + `"}`, wantFields: []string{"name"}, wantInError: []string{"at most 64 characters"}},
		{name: "unknown property", raw: `{"name":"x","nodes":3}`, wantFields: []string{"nodes"}, wantInError: []string{"nodes is not a supported parameter"}},
		{name: "region not in enum", raw: `{"name":"x","region":"mars"}`, wantFields: []string{"region"},
			wantInError: []string{`region "mars" is not one of: eastus`}},
		{name: "region in enum", raw: `{"name":"x","region":"westeurope"}`, check: func(t *testing.T, p ProvisioningParameters) {
			if p.Region == nil || *p.Region != "westeurope" {
				t.Errorf("region = %v", p.Region)
			}
		}},
		{name: "aws region rejected on azure", raw: `{"name":"x","region":"eu-central-1"}`, wantFields: []string{"region"}},
		{name: "machine type", raw: `{"name":"x","machineType":"Standard_D8s_v5"}`},
		{name: "networking: nodes only, the other ranges default", raw: `{"name":"x","networking":{"nodes":"10.180.0.0/16"}}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if n, pods, svc := p.Networking.CIDRs(); n != "10.180.0.0/16" || pods != DefaultPodsCIDR || svc != DefaultServicesCIDR {
					t.Errorf("CIDRs %s %s %s", n, pods, svc)
				}
			}},
		{name: "networking: all three", raw: `{"name":"x","networking":{"nodes":"10.180.0.0/16","pods":"10.32.0.0/12","services":"10.112.0.0/13"}}`},
		{name: "networking: nodes required", raw: `{"name":"x","networking":{"pods":"10.32.0.0/12"}}`, wantFields: []string{"networking.nodes"}},
		{name: "networking: nodes overlap the default pods", raw: `{"name":"x","networking":{"nodes":"10.96.0.0/16"}}`,
			wantFields: []string{"networking.nodes"}, wantInError: []string{"10.96.0.0/16 overlaps networking.pods (10.96.0.0/13, the default)"}},
		{name: "networking: pods overlap services", raw: `{"name":"x","networking":{"nodes":"10.180.0.0/16","pods":"10.100.0.0/16","services":"10.100.0.0/20"}}`,
			wantFields: []string{"networking.pods"}, wantInError: []string{"10.100.0.0/16 overlaps networking.services (10.100.0.0/20)"}},
		{name: "networking: a range Gardener reserves", raw: `{"name":"x","networking":{"nodes":"10.242.0.0/16"}}`,
			wantFields: []string{"networking.nodes"}, wantInError: []string{"10.242.0.0/16 overlaps 10.242.0.0/16, a range Gardener reserves"}},
		{name: "networking: not a CIDR", raw: `{"name":"x","networking":{"nodes":"ten"}}`,
			wantFields: []string{"networking.nodes"}, wantInError: []string{`"ten" is not an IPv4 CIDR`}},
		{name: "networking: not a network address", raw: `{"name":"x","networking":{"nodes":"10.180.0.1/16"}}`,
			wantFields: []string{"networking.nodes"}, wantInError: []string{"did you mean 10.180.0.0/16?"}},
		{name: "networking: nodes too small", raw: `{"name":"x","networking":{"nodes":"10.180.0.0/24"}}`,
			wantFields: []string{"networking.nodes"}, wantInError: []string{"/23 or larger"}},
		{name: "networking: not on a basic-form plan", planID: TrialPlanID, raw: `{"name":"x","networking":{"nodes":"10.180.0.0/16"}}`,
			wantFields: []string{"networking"}},
		{name: "lite machine type narrowed", planID: AzureLitePlanID, raw: `{"name":"x","machineType":"Standard_D8s_v5"}`, wantFields: []string{"machineType"}},
		{name: "autoscaler within bounds", raw: `{"name":"x","autoScalerMin":3,"autoScalerMax":20}`, check: func(t *testing.T, p ProvisioningParameters) {
			if *p.AutoScalerMin != 3 || *p.AutoScalerMax != 20 {
				t.Errorf("autoscaler = %d..%d", *p.AutoScalerMin, *p.AutoScalerMax)
			}
		}},
		{name: "autoscaler whole float accepted", raw: `{"name":"x","autoScalerMin":4.0}`, check: func(t *testing.T, p ProvisioningParameters) {
			if *p.AutoScalerMin != 4 {
				t.Errorf("autoScalerMin = %d", *p.AutoScalerMin)
			}
		}},
		{name: "autoscaler fraction", raw: `{"name":"x","autoScalerMin":3.5}`, wantFields: []string{"autoScalerMin"}, wantInError: []string{"whole number"}},
		{name: "autoscaler above max", raw: `{"name":"x","autoScalerMax":301}`, wantFields: []string{"autoScalerMax"},
			wantInError: []string{"autoScalerMax must be at most 300"}},
		{name: "autoscaler below min", raw: `{"name":"x","autoScalerMin":2}`, wantFields: []string{"autoScalerMin"}, wantInError: []string{"at least 3"}},
		{name: "both bounds wrong", raw: `{"name":"x","autoScalerMin":1,"autoScalerMax":999}`, wantFields: []string{"autoScalerMax", "autoScalerMin"}},
		{name: "lite bounds", planID: AzureLitePlanID, raw: `{"name":"x","autoScalerMin":2,"autoScalerMax":41}`, wantFields: []string{"autoScalerMax"},
			wantInError: []string{"at most 40"}},
		{name: "min greater than max", raw: `{"name":"x","autoScalerMin":10,"autoScalerMax":5}`, wantFields: []string{"autoScalerMin"},
			wantInError: []string{"autoScalerMin must not be greater than autoScalerMax (10 > 5)"}},
		{name: "min greater than default max", planID: AzureLitePlanID, raw: `{"name":"x","autoScalerMax":2,"autoScalerMin":3}`, wantFields: []string{"autoScalerMin"}},
		{name: "max less than default min", raw: `{"name":"x","autoScalerMax":3}`},
		{name: "node count refused with what to use instead", raw: `{"name":"x","nodeCount":5}`, wantFields: []string{"nodeCount"},
			wantInError: []string{"nodeCount is not supported", "set autoScalerMin and autoScalerMax instead"}},
		{name: "zones count", raw: `{"name":"x","zonesCount":1}`},
		{name: "zones count above 3", raw: `{"name":"x","zonesCount":4}`, wantFields: []string{"zonesCount"}},
		{name: "zones count not offered on lite", planID: AzureLitePlanID, raw: `{"name":"x","zonesCount":1}`, wantFields: []string{"zonesCount"}},
		{name: "components", raw: `{"name":"x","components":["kiali","tracing"]}`},
		{name: "components unknown", raw: `{"name":"x","components":["kiali","istio"]}`, wantFields: []string{"components[1]"},
			wantInError: []string{`components[1] "istio" is not one of: kiali, tracing`}},
		{name: "components repeated", raw: `{"name":"x","components":["kiali","kiali"]}`, wantFields: []string{"components"}},
		{name: "kyma version", raw: `{"name":"x","kymaVersion":"2.20.0"}`},
		{name: "modules default true", raw: `{"name":"x","modules":{"default":true}}`, check: func(t *testing.T, p ProvisioningParameters) {
			if !p.Modules.UsesDefaultModules() {
				t.Errorf("modules %+v do not use the defaults", p.Modules)
			}
		}},
		{name: "modules default false", raw: `{"name":"x","modules":{"default":false}}`, check: func(t *testing.T, p ProvisioningParameters) {
			if l, custom := p.Modules.CustomList(); p.Modules.UsesDefaultModules() || custom || l != nil {
				t.Errorf("modules %+v: want none", p.Modules)
			}
		}},
		{name: "modules default with channel", raw: `{"name":"x","modules":{"default":true,"channel":"fast"}}`, check: func(t *testing.T, p ProvisioningParameters) {
			if p.Modules.Channel != "fast" || !p.Modules.UsesDefaultModules() {
				t.Errorf("modules = %+v", p.Modules)
			}
		}},
		{name: "modules empty object means default", raw: `{"name":"x","modules":{}}`, check: func(t *testing.T, p ProvisioningParameters) {
			if !p.Modules.UsesDefaultModules() {
				t.Errorf("modules %+v do not use the defaults", p.Modules)
			}
		}},
		{name: "modules list", raw: `{"name":"x","modules":{"channel":"regular","list":[{"name":"btp-operator","channel":"fast","customResourcePolicy":"Ignore","managed":false},{"name":"keda"}]}}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				l, custom := p.Modules.CustomList()
				if !custom || len(l) != 2 || l[0].Name != "btp-operator" || l[0].CustomResourcePolicy != "Ignore" || *l[0].Managed || l[1].Name != "keda" {
					t.Errorf("modules = %+v", p.Modules)
				}
			}},
		{name: "modules empty list means none", raw: `{"name":"x","modules":{"list":[]}}`, check: func(t *testing.T, p ProvisioningParameters) {
			l, custom := p.Modules.CustomList()
			if !custom || len(l) != 0 || p.Modules.UsesDefaultModules() {
				t.Errorf("modules = %+v, want an empty custom list", p.Modules)
			}
			// Stored and read back, "none" must stay "none".
			b, _ := json.Marshal(p)
			if !strings.Contains(string(b), `"modules":{"list":[]}`) {
				t.Errorf("marshalled %s lost the empty list", b)
			}
		}},
		{name: "modules invalid customResourcePolicy", raw: `{"name":"x","modules":{"list":[{"name":"keda","customResourcePolicy":"Sometimes"}]}}`,
			wantFields:  []string{"modules.list[0].customResourcePolicy"},
			wantInError: []string{`modules.list[0].customResourcePolicy "Sometimes" is not one of: CreateAndDelete, Ignore`}},
		{name: "modules list entry without name", raw: `{"name":"x","modules":{"list":[{"channel":"fast"}]}}`, wantFields: []string{"modules.list[0].name"},
			wantInError: []string{"modules.list[0].name is required"}},
		{name: "modules list entry empty name", raw: `{"name":"x","modules":{"list":[{"name":""}]}}`, wantFields: []string{"modules.list[0].name"},
			wantInError: []string{"modules.list[0].name must not be empty"}},
		{name: "modules duplicate name", raw: `{"name":"x","modules":{"list":[{"name":"keda"},{"name":"keda","channel":"fast"}]}}`,
			wantFields: []string{"modules.list[1].name"}},
		{name: "modules default and list", raw: `{"name":"x","modules":{"default":true,"list":[]}}`, wantFields: []string{"modules"},
			wantInError: []string{"modules must match one of its allowed forms"}},
		{name: "modules default not boolean", raw: `{"name":"x","modules":{"default":"yes"}}`, wantFields: []string{"modules.default"}},
		{name: "modules not an object", raw: `{"name":"x","modules":"all"}`, wantFields: []string{"modules"}, wantInError: []string{"modules must be an object"}},
		{name: "modules unknown channel", raw: `{"name":"x","modules":{"channel":"nightly"}}`, wantFields: []string{"modules.channel"}},
		{name: "administrators", raw: `{"name":"x","administrators":["admin@example.com"]}`},
		{name: "administrators not an e-mail", raw: `{"name":"x","administrators":["admin"]}`, wantFields: []string{"administrators[0]"},
			wantInError: []string{"e-mail"}},
		{name: "oidc", raw: `{"name":"x","oidc":{"clientID":"c","issuerURL":"https://issuer.example.com","signingAlgs":["RS256"],"usernameClaim":"sub","usernamePrefix":"-","groupsClaim":"groups"}}`,
			check: func(t *testing.T, p ProvisioningParameters) {
				if p.OIDC == nil || p.OIDC.IssuerURL != "https://issuer.example.com" || !slices.Equal(p.OIDC.SigningAlgs, []string{"RS256"}) {
					t.Errorf("oidc = %+v", p.OIDC)
				}
			}},
		{name: "oidc http issuer", raw: `{"name":"x","oidc":{"clientID":"c","issuerURL":"http://issuer.example.com"}}`, wantFields: []string{"oidc.issuerURL"},
			wantInError: []string{"https://"}},
		{name: "oidc missing client", raw: `{"name":"x","oidc":{"issuerURL":"https://issuer.example.com"}}`, wantFields: []string{"oidc.clientID"}},
		{name: "oidc unknown alg", raw: `{"name":"x","oidc":{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["none"]}}`, wantFields: []string{"oidc.signingAlgs[0]"}},
		{name: "several problems all named", raw: `{"name":"a b","region":"mars","autoScalerMax":999,"extra":true}`,
			wantFields:  []string{"autoScalerMax", "extra", "name", "region"},
			wantInError: []string{"autoScalerMax must be at most 300", `region "mars" is not one of`, "extra is not a supported parameter"}},
		{name: "over 64 KiB", raw: `{"name":"x","kymaVersion":"` + strings.Repeat("a", 64<<10) + `"}`, wantFields: []string{""},
			wantInError: []string{"64 KiB"}},

		{name: "trial minimal", planID: TrialPlanID, raw: `{"name":"x"}`},
		{name: "trial region", planID: TrialPlanID, raw: `{"name":"x","region":"us"}`},
		{name: "trial hyperscaler region rejected", planID: TrialPlanID, raw: `{"name":"x","region":"eastus"}`, wantFields: []string{"region"},
			wantInError: []string{"europe, us, asia"}},
		{name: "trial has no autoscaler", planID: TrialPlanID, raw: `{"name":"x","autoScalerMin":1}`, wantFields: []string{"autoScalerMin"}},
		{name: "trial modules", planID: TrialPlanID, raw: `{"name":"x","modules":{"default":false}}`},

		{name: "free on aws platform region", planID: FreePlanID, platformRegion: "cf-eu10", raw: `{"name":"x","region":"eu-central-1"}`},
		{name: "free azure region on aws platform region", planID: FreePlanID, platformRegion: "cf-eu10", raw: `{"name":"x","region":"westeurope"}`,
			wantFields: []string{"region"}, wantInError: []string{`region "westeurope" is not one of: eu-central-1`}},
		{name: "free azure region on a platform region the plans file does not name", planID: FreePlanID, platformRegion: "cf-us30",
			raw: `{"name":"x","region":"westeurope"}`, wantFields: []string{"region"}, wantInError: []string{"is not one of: eu-central-1,"}},
		{name: "free on azure platform region", planID: FreePlanID, platformRegion: "cf-eu20", raw: `{"name":"x","region":"westeurope"}`},
		{name: "free default platform region is aws", planID: FreePlanID, raw: `{"name":"x","region":"westeurope"}`, wantFields: []string{"region"}},
		{name: "free on gcp platform region falls back to aws", planID: FreePlanID, platformRegion: "cf-us30", raw: `{"name":"x","region":"us-east-1"}`},
		{name: "free region nowhere offered", planID: FreePlanID, raw: `{"name":"x","region":"mars"}`, wantFields: []string{"region"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			planID := tt.planID
			if planID == "" {
				planID = AzurePlanID
			}
			var raw json.RawMessage
			if tt.raw != "" {
				raw = json.RawMessage(tt.raw)
			}
			p, err := c.ValidateParameters(planID, tt.platformRegion, raw)
			if tt.wantFields == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tt.check != nil {
					tt.check(t, p)
				}
				return
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("err = %v (%T), want *ValidationError", err, err)
			}
			if verr.Subject != "parameters" {
				t.Errorf("subject = %q", verr.Subject)
			}
			if got := verr.Fields(); !slices.Equal(got, tt.wantFields) {
				t.Errorf("fields = %q, want %q (error: %v)", got, tt.wantFields, err)
			}
			for _, want := range tt.wantInError {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			for _, p := range verr.Problems {
				// Messages are for platform users: no Go or JSON-schema jargon.
				for _, noise := range []string{"jsonschema", "keb:///", "struct", "json:", "oneOf", "additionalProperties"} {
					if strings.Contains(p.Message, noise) {
						t.Errorf("message %q contains %q", p.Message, noise)
					}
				}
			}
		})
	}
}

func TestValidateParametersUnknownPlan(t *testing.T) {
	t.Parallel()
	_, err := defaultCatalog(t).ValidateParameters("no-such-plan", "", json.RawMessage(`{"name":"x"}`))
	var verr *ValidationError
	if !errors.Is(err, ErrUnknownPlan) || errors.As(err, &verr) {
		t.Errorf("err = %v, want ErrUnknownPlan and no ValidationError", err)
	}
}

func TestValidationErrorFormatting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      *ValidationError
		want     string
		wantLine string
	}{
		{
			name: "fields and whole-document problem",
			err: newValidationError("parameters", []FieldProblem{
				{Field: "region", Message: `"mars" is not one of: eastus`},
				{Field: "autoScalerMax", Message: "must be at most 20"},
				{Field: "autoScalerMax", Message: "must be at most 20"},
			}),
			want:     `invalid parameters: autoScalerMax must be at most 20; region "mars" is not one of: eastus`,
			wantLine: "parameters.autoScalerMax: must be at most 20",
		},
		{
			name:     "root problem",
			err:      newValidationError("context", []FieldProblem{{Message: "must be an object, not a list"}}),
			want:     "invalid context: must be an object, not a list",
			wantLine: "context: must be an object, not a list",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if got := tt.err.Problems[0].String(tt.err.Subject); got != tt.wantLine {
				t.Errorf("String() = %q, want %q", got, tt.wantLine)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	ptr := func(s string) *string { return &s }
	intp := func(i int) *int { return &i }
	// trial is a one-node runtime (trial, free) on provider in region (the area for a trial).
	trial := func(provider, region, providerRegion, machine string) Resolved {
		return Resolved{Provider: provider, Region: region, ProviderRegion: providerRegion, MachineType: machine,
			AutoScalerMin: 1, AutoScalerMax: 1, NodeCount: 1, ZonesCount: 1}
	}

	tests := []struct {
		name           string
		planID         string
		platformRegion string
		params         ProvisioningParameters
		want           Resolved
	}{
		{name: "azure defaults", planID: AzurePlanID, params: ProvisioningParameters{Name: "x"},
			want: Resolved{Provider: "azure", Region: "eastus", ProviderRegion: "eastus", MachineType: "Standard_D2s_v5", AutoScalerMin: 3, AutoScalerMax: 20, NodeCount: 3, ZonesCount: 3}},
		{name: "aws given values", planID: AWSPlanID, params: ProvisioningParameters{Name: "x", Region: ptr("us-east-1"), MachineType: ptr("m6i.xlarge"), AutoScalerMin: intp(4), AutoScalerMax: intp(8), NodeCount: intp(5), ZonesCount: intp(1)},
			want: Resolved{Provider: "aws", Region: "us-east-1", ProviderRegion: "us-east-1", MachineType: "m6i.xlarge", AutoScalerMin: 4, AutoScalerMax: 8, NodeCount: 5, ZonesCount: 1}},
		{name: "lite defaults: Standard_D2s_v5 (upstream's first)", planID: AzureLitePlanID, params: ProvisioningParameters{Name: "x"},
			want: Resolved{Provider: "azure", Region: "eastus", ProviderRegion: "eastus", MachineType: "Standard_D2s_v5", AutoScalerMin: 2, AutoScalerMax: 10, NodeCount: 3, ZonesCount: 1}},
		{name: "aws defaults: mi.large", planID: AWSPlanID, params: ProvisioningParameters{Name: "x"},
			want: Resolved{Provider: "aws", Region: "eu-central-1", ProviderRegion: "eu-central-1", MachineType: "mi.large", AutoScalerMin: 3, AutoScalerMax: 20, NodeCount: 3, ZonesCount: 3}},
		// Trials as upstream places them: the platform region's area, else the region
		// parameter, else the provider's fallback; EU access and KSA forced.
		{name: "trial region follows platform region", planID: TrialPlanID, platformRegion: "cf-us10", params: ProvisioningParameters{Name: "x"},
			want: trial("azure", "us", "eastus", "Standard_D4s_v5")},
		{name: "trial: the platform region's area wins over the region parameter", planID: TrialPlanID, platformRegion: "cf-eu10",
			params: ProvisioningParameters{Name: "x", Region: ptr("asia")}, want: trial("azure", "europe", "westeurope", "Standard_D4s_v5")},
		{name: "trial asked region", planID: TrialPlanID, platformRegion: "cf-jp20", params: ProvisioningParameters{Name: "x", Region: ptr("asia")},
			want: trial("azure", "asia", "southeastasia", "Standard_D4s_v5")},
		{name: "azure trial elsewhere: eastus", planID: TrialPlanID, platformRegion: "cf-jp20", params: ProvisioningParameters{Name: "x"},
			want: trial("azure", "us", "eastus", "Standard_D4s_v5")},
		{name: "aws trial in europe: eu-west-1", planID: TrialPlanID, platformRegion: "cf-eu10", params: ProvisioningParameters{Name: "x", Provider: ptr("AWS")},
			want: trial("aws", "europe", "eu-west-1", "mi.xlarge")},
		{name: "aws trial elsewhere: eu-west-1", planID: TrialPlanID, platformRegion: "cf-jp20", params: ProvisioningParameters{Name: "x", Provider: ptr("AWS")},
			want: trial("aws", "europe", "eu-west-1", "mi.xlarge")},
		{name: "gcp trial elsewhere: europe-west3", planID: TrialPlanID, platformRegion: "cf-jp20", params: ProvisioningParameters{Name: "x", Provider: ptr("GCP")},
			want: trial("gcp", "europe", "europe-west3", "n2-standard-4")},
		{name: "azure trial on AWS's EU access platform region", planID: TrialPlanID, platformRegion: "cf-eu11", params: ProvisioningParameters{Name: "x"},
			want: trial("azure", "us", "switzerlandnorth", "Standard_D4s_v5")},
		{name: "azure trial on SAP Cloud Infrastructure's EU access platform region", planID: TrialPlanID, platformRegion: "cf-eu01",
			params: ProvisioningParameters{Name: "x"}, want: trial("azure", "us", "switzerlandnorth", "Standard_D4s_v5")},
		{name: "aws trial on Azure's EU access platform region", planID: TrialPlanID, platformRegion: "cf-ch20", params: ProvisioningParameters{Name: "x", Provider: ptr("AWS")},
			want: trial("aws", "europe", "eu-central-1", "mi.xlarge")},
		{name: "gcp trials ignore EU access", planID: TrialPlanID, platformRegion: "cf-eu11", params: ProvisioningParameters{Name: "x", Provider: ptr("GCP"), Region: ptr("us")},
			want: trial("gcp", "us", "us-central1", "n2-standard-4")},
		{name: "gcp trial on KSA", planID: TrialPlanID, platformRegion: "cf-sa30", params: ProvisioningParameters{Name: "x", Provider: ptr("GCP")},
			want: trial("gcp", "europe", "me-central2", "n2-standard-4")},
		{name: "free on azure platform", planID: FreePlanID, platformRegion: "cf-eu20", params: ProvisioningParameters{Name: "x"},
			want: trial("azure", "eastus", "eastus", "Standard_D4s_v5")},
		{name: "free on azure platform in the region asked for", planID: FreePlanID, platformRegion: "cf-eu20", params: ProvisioningParameters{Name: "x", Region: ptr("westeurope")},
			want: trial("azure", "westeurope", "westeurope", "Standard_D4s_v5")},
		{name: "free on aws platform: eu-central-1 whatever was asked for", planID: FreePlanID, platformRegion: "cf-us10", params: ProvisioningParameters{Name: "x", Region: ptr("us-east-1")},
			want: trial("aws", "us-east-1", "eu-central-1", "mi.xlarge")},
		{name: "free without platform region", planID: FreePlanID, params: ProvisioningParameters{Name: "x"},
			want: trial("aws", "eu-central-1", "eu-central-1", "mi.xlarge")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := c.Resolve(tt.planID, tt.platformRegion, tt.params)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if got.Plan.ID != tt.planID {
				t.Errorf("plan = %s", got.Plan.ID)
			}
			got.Plan, got.Parameters = Plan{}, ProvisioningParameters{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resolve =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

// TestResolveSmallerMachineTypes: with upstream's useSmallerMachineTypes, trial and free
// runtimes get the smaller machines (AWS mi.large, Azure Standard_D2s_v5; GCP trials keep
// n2-standard-4), paid plans their own defaults.
func TestResolveSmallerMachineTypes(t *testing.T) {
	t.Parallel()
	c, err := Load("", SmallerMachineTypes())
	if err != nil {
		t.Fatal(err)
	}
	aws, gcp := "AWS", "GCP"
	for _, tc := range []struct {
		planID, platformRegion string
		provider               *string
		want                   string
	}{
		{TrialPlanID, "cf-eu10", nil, "Standard_D2s_v5"},
		{TrialPlanID, "cf-eu10", &aws, "mi.large"},
		{TrialPlanID, "cf-eu10", &gcp, "n2-standard-4"},
		{FreePlanID, "cf-eu10", nil, "mi.large"},
		{FreePlanID, "cf-eu20", nil, "Standard_D2s_v5"},
		{AWSPlanID, "cf-eu10", nil, "mi.large"},
		{AzurePlanID, "cf-eu10", nil, "Standard_D2s_v5"},
	} {
		res, err := c.Resolve(tc.planID, tc.platformRegion, ProvisioningParameters{Name: "x", Provider: tc.provider})
		if err != nil || res.MachineType != tc.want {
			t.Errorf("%s on %s (provider %v): machine %s, %v; want %s", tc.planID, tc.platformRegion, deref(tc.provider), res.MachineType, err, tc.want)
		}
	}
}

// TestNetworkingDualStack: networking.dualStack is offered and accepted on the plans of a
// provider with dualStack in the plans file (AWS, as upstream's providers data), its description
// linking to the configured page; elsewhere a 400 names it (upstream: refused when it rejects
// unsupported parameters, ignored otherwise). It is recorded with the instance.
func TestNetworkingDualStack(t *testing.T) {
	t.Parallel()
	const docs = "https://docs.example/dual-stack"
	c, err := Load("", DualStackDocsURL(docs))
	if err != nil {
		t.Fatal(err)
	}
	lenient, err := Load("", IgnoreUnsupportedParameters())
	if err != nil {
		t.Fatal(err)
	}
	const raw = `{"name":"x","networking":{"nodes":"10.180.0.0/16","dualStack":true}}`
	for _, tc := range []struct {
		planID, platformRegion string
		offered                bool
	}{
		{AWSPlanID, "cf-eu10", true}, {PreviewPlanID, "cf-us10", true}, {BuildRuntimeAWSPlanID, "cf-eu11", true},
		{AzurePlanID, "cf-eu20", false}, {AzureLitePlanID, "cf-eu20", false}, {GCPPlanID, "cf-eu30", false},
		{SapConvergedCloudPlanID, "cf-eu20", false},
	} {
		e, err := c.entryFor(tc.planID, tc.platformRegion)
		if err != nil {
			t.Fatal(err)
		}
		props, _ := e.create.doc["properties"].(map[string]any)
		networking, _ := props[paramNetworking].(map[string]any)
		nprops, _ := networking["properties"].(map[string]any)
		ds, offered := nprops["dualStack"].(map[string]any)
		if offered != tc.offered {
			t.Errorf("%s: networking.dualStack offered %v, want %v", e.plan.Name, offered, tc.offered)
		}
		p, err := c.ValidateParameters(tc.planID, tc.platformRegion, json.RawMessage(raw))
		if !tc.offered {
			var verr *ValidationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), "networking.dualStack") {
				t.Errorf("%s: dualStack answered %v, want a validation error naming networking.dualStack", e.plan.Name, err)
			}
			if _, err := lenient.ValidateParameters(tc.planID, tc.platformRegion, json.RawMessage(raw)); err != nil {
				t.Errorf("%s: ignoring unsupported parameters, dualStack is refused: %v", e.plan.Name, err)
			}
			continue
		}
		if ds["type"] != "boolean" || ds["title"] != dualStackTitle || !strings.HasSuffix(ds["description"].(string), docs) {
			t.Errorf("%s: dualStack schema %v, want upstream's boolean linking to %s", e.plan.Name, ds, docs)
		}
		if err != nil || p.Networking == nil || p.Networking.DualStack == nil || !*p.Networking.DualStack {
			t.Errorf("%s: dualStack true gives %+v, %v; want it recorded", e.plan.Name, p.Networking, err)
		}
		if _, err := c.ValidateParameters(tc.planID, tc.platformRegion, json.RawMessage(`{"name":"x","networking":{"nodes":"10.180.0.0/16","dualStack":"yes"}}`)); err == nil {
			t.Errorf("%s: dualStack \"yes\" accepted, want a boolean", e.plan.Name)
		}
	}
}

// TestAuditLogAccessAsUpstreamShipsIt: with upstream's shipped broker.auditLogAccess (false) no
// schema offers auditLogAccess; paid plans accept it in a PUT or a PATCH and change nothing,
// trial and free refuse it (upstream-fidelity §3.10, §5.1).
func TestAuditLogAccessAsUpstreamShipsIt(t *testing.T) {
	t.Parallel()
	c := defaultCatalog(t)
	for _, tc := range []struct {
		planID, platformRegion string
		accepted               bool
	}{
		{AWSPlanID, "cf-eu10", true}, {AzurePlanID, "cf-eu20", true}, {AzureLitePlanID, "cf-eu20", true},
		{GCPPlanID, "cf-eu30", true}, {SapConvergedCloudPlanID, "cf-eu20", true},
		{TrialPlanID, "cf-eu10", false}, {FreePlanID, "cf-eu10", false},
	} {
		e, err := c.entryFor(tc.planID, tc.platformRegion)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range []map[string]any{e.create.doc, e.update.doc} {
			if props, _ := doc["properties"].(map[string]any); props[paramAuditLogAccess] != nil {
				t.Errorf("%s: a schema offers auditLogAccess; upstream's shipped settings offer it on no plan", e.plan.Name)
			}
		}
		p, err := c.ValidateParameters(tc.planID, tc.platformRegion, json.RawMessage(`{"name":"x","auditLogAccess":true}`))
		_, uerr := c.ValidateUpdate(UpdateRequest{FromPlanID: tc.planID, PlatformRegion: tc.platformRegion,
			Stored: ProvisioningParameters{Name: "x"}, Raw: json.RawMessage(`{"auditLogAccess":true}`)})
		if !tc.accepted {
			for what, err := range map[string]error{"PUT": err, "PATCH": uerr} {
				if err == nil || !strings.Contains(err.Error(), "auditLogAccess is not available on plan "+e.plan.Name) {
					t.Errorf("%s: auditLogAccess in a %s answered %v, want it refused as not available", e.plan.Name, what, err)
				}
			}
			continue
		}
		if err != nil || uerr != nil {
			t.Errorf("%s: auditLogAccess refused (PUT %v, PATCH %v); upstream accepts and ignores it", e.plan.Name, err, uerr)
		}
		if want := (ProvisioningParameters{Name: "x"}); !reflect.DeepEqual(p, want) {
			t.Errorf("%s: auditLogAccess gave %+v, want nothing recorded beside the name", e.plan.Name, p)
		}
		_, err = c.ValidateParameters(tc.planID, tc.platformRegion, json.RawMessage(`{"name":"x","auditLogAccess":"yes"}`))
		_, uerr = c.ValidateUpdate(UpdateRequest{FromPlanID: tc.planID, PlatformRegion: tc.platformRegion,
			Stored: ProvisioningParameters{Name: "x"}, Raw: json.RawMessage(`{"auditLogAccess":"yes"}`)})
		if err == nil || uerr == nil || !strings.Contains(err.Error(), "auditLogAccess") || !strings.Contains(uerr.Error(), "auditLogAccess") {
			t.Errorf("%s: auditLogAccess \"yes\" answered PUT %v, PATCH %v; want a boolean", e.plan.Name, err, uerr)
		}
	}
}

// TestGVisorGatedAsUpstream: with upstream's shipped gvisorEnabled (false) no schema names gvisor,
// yet the plans with additional pools accept it, the runtime's and each pool's, checked as the
// schema would; OfferGVisor puts it into the forms. Trial and gdch take none.
func TestGVisorGatedAsUpstream(t *testing.T) {
	t.Parallel()
	shipped := defaultCatalog(t)
	offered, err := Load("", OfferGVisor())
	if err != nil {
		t.Fatal(err)
	}
	const raw = `{"name":"x","gvisor":{"enabled":true},"additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D4s_v5","gvisor":{"enabled":true}}]}`
	for _, tc := range []struct {
		c      *Catalog
		inForm bool
	}{{shipped, false}, {offered, true}} {
		e, err := tc.c.entryFor(AzurePlanID, "cf-eu20")
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range []map[string]any{e.create.doc, e.update.doc} {
			props, _ := doc["properties"].(map[string]any)
			pools, _ := props[paramAdditionalPools].(map[string]any)
			items, _ := pools["items"].(map[string]any)
			itemProps, _ := items["properties"].(map[string]any)
			_, root := props[paramGVisor]
			_, pool := itemProps[paramGVisor]
			if root != tc.inForm || pool != tc.inForm || slices.Contains(asStrings(doc["_controlsOrder"]), paramGVisor) != tc.inForm {
				t.Errorf("offered %v: gvisor in the form: root %v, pool %v", tc.inForm, root, pool)
			}
		}
		p, err := tc.c.ValidateParameters(AzurePlanID, "cf-eu20", json.RawMessage(raw))
		if err != nil || !p.GVisor.On() || p.AdditionalWorkerNodePools == nil || !(*p.AdditionalWorkerNodePools)[0].GVisor.On() {
			t.Errorf("offered %v: gvisor gave %+v, %v; want it on for the runtime and the pool", tc.inForm, p.GVisor, err)
		}
		up, err := tc.c.ValidateUpdate(UpdateRequest{FromPlanID: AzurePlanID, PlatformRegion: "cf-eu20", ProviderRegion: "eastus",
			Stored: ProvisioningParameters{Name: "x"}, Raw: json.RawMessage(`{"gvisor":{"enabled":false}}`)})
		if err != nil || up.GVisor == nil || up.GVisor.Enabled {
			t.Errorf("offered %v: PATCH gvisor off gave %+v, %v", tc.inForm, up.GVisor, err)
		}
		for _, bad := range []struct{ raw, field string }{
			{`{"name":"x","gvisor":{"enabled":"yes"}}`, "gvisor.enabled"},
			{`{"name":"x","gvisor":true}`, "gvisor"},
			{`{"name":"x","additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D4s_v5","gvisor":{"enabled":true,"x":1}}]}`, "additionalWorkerNodePools[0].gvisor.x"},
		} {
			if _, err := tc.c.ValidateParameters(AzurePlanID, "cf-eu20", json.RawMessage(bad.raw)); err == nil || !strings.Contains(err.Error(), bad.field) {
				t.Errorf("offered %v: %s answered %v, want a problem naming %s", tc.inForm, bad.raw, err, bad.field)
			}
		}
		if _, err := tc.c.ValidateParameters(TrialPlanID, "cf-eu10", json.RawMessage(`{"name":"x","gvisor":{"enabled":false}}`)); err == nil ||
			!strings.Contains(err.Error(), "gvisor is not available on plan trial") {
			t.Errorf("offered %v: gvisor on trial answered %v", tc.inForm, err)
		}
	}
}
