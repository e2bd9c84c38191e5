package app_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
)

const (
	gcpPlanID  = catalog.GCPPlanID
	freePlanID = catalog.FreePlanID
	sccPlanID  = catalog.SapConvergedCloudPlanID
)

// regionCatalog is what one platform region's catalog offers: per plan
// name, the region enum of its create schema.
func (b *bundle) regionCatalog(prefix string) map[string][]string {
	b.t.Helper()
	r := b.expect(b.do(http.MethodGet, prefix+"/v2/catalog", ""), http.StatusOK)
	out := map[string][]string{}
	for _, s := range r.body["services"].([]any) {
		for _, p := range s.(map[string]any)["plans"].([]any) {
			plan := p.(map[string]any)
			create := plan["schemas"].(map[string]any)["service_instance"].(map[string]any)["create"].(map[string]any)["parameters"].(map[string]any)
			var regions []string
			region, shown := create["properties"].(map[string]any)["region"].(map[string]any)
			if !shown {
				// trial: the region is a hidden parameter, as upstream's trial form has it
				out[plan["name"].(string)] = nil
				continue
			}
			for _, v := range region["enum"].([]any) {
				regions = append(regions, v.(string))
			}
			out[plan["name"].(string)] = regions
		}
	}
	return out
}

// TestCatalogPerPlatformRegion: each platform region's catalog lists the
// plans and hyperscaler regions offered there (upstream-today.md section
// 3): EU access (cf-eu11: AWS in eu-central-1 only; cf-ch20: Azure in
// switzerlandnorth only), KSA (cf-sa30: GCP in me-central2 only), SAP Cloud
// Infrastructure only where a region is configured for the platform region;
// a provisioning that names a region not offered there, or a plan without a
// region there, gets a 400 and leaves nothing behind.
func TestCatalogPerPlatformRegion(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) {
		c.EnabledPlans = []string{"azure", "aws", "gcp", "azure_lite", "trial", "free", "sap-converged-cloud", "build-runtime-aws"}
	}, io.Discard)
	awsAll := []string{"eu-central-1", "eu-west-2", "ca-central-1", "sa-east-1", "us-east-1", "us-west-2", "ap-northeast-1",
		"ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2"}
	// switzerlandnorth only on cf-ch20, as upstream.
	azureAll := []string{"eastus", "centralus", "westus2", "uksouth", "northeurope", "westeurope", "japaneast",
		"southeastasia", "australiaeast", "brazilsouth", "canadacentral"}
	gcpAll := []string{"europe-west3", "asia-south1", "us-central1", "me-central2", "asia-northeast2", "me-west1", "southamerica-east1",
		"australia-southeast1", "asia-northeast1", "asia-southeast1", "us-west1", "us-east4", "europe-west4"}
	want := map[string]map[string][]string{
		"/oauth": {"azure": azureAll, "aws": awsAll, "gcp": gcpAll, "azure_lite": azureAll, "trial": nil, "free": awsAll,
			"sap-converged-cloud": {"eu-de-2"}, "build-runtime-aws": awsAll},
		"/oauth/cf-eu10": {"azure": azureAll, "aws": awsAll, "gcp": gcpAll, "azure_lite": azureAll, "trial": nil, "free": awsAll,
			"sap-converged-cloud": {"eu-de-2"}, "build-runtime-aws": awsAll},
		"/oauth/cf-eu11": {"azure": azureAll, "aws": {"eu-central-1"}, "gcp": gcpAll, "azure_lite": azureAll, "trial": nil,
			"free": {"eu-central-1"}, "build-runtime-aws": {"eu-central-1"}},
		"/oauth/cf-ch20": {"azure": {"switzerlandnorth"}, "aws": awsAll, "gcp": gcpAll, "azure_lite": {"switzerlandnorth"},
			"trial": nil, "free": {"switzerlandnorth"}, "build-runtime-aws": awsAll},
		"/oauth/cf-sa30": {"azure": azureAll, "aws": awsAll, "gcp": {"me-central2"}, "azure_lite": azureAll, "trial": nil,
			"free": awsAll, "build-runtime-aws": awsAll},
		"/oauth/cf-us10": {"azure": azureAll, "aws": awsAll, "gcp": gcpAll, "azure_lite": azureAll, "trial": nil, "free": awsAll,
			"sap-converged-cloud": {"na-us-1"}, "build-runtime-aws": awsAll},
		"/oauth/cf-eu20": {"azure": azureAll, "aws": awsAll, "gcp": gcpAll, "azure_lite": azureAll, "trial": nil, "free": azureAll,
			"sap-converged-cloud": {"eu-de-1"}, "build-runtime-aws": awsAll},
		// A platform region the plans file does not name: the default lists, no SAP Cloud Infrastructure;
		// free offers its platform provider's regions only (Azure here), never a union (as upstream).
		"/oauth/cf-us21": {"azure": azureAll, "aws": awsAll, "gcp": gcpAll, "azure_lite": azureAll, "trial": nil,
			"free": azureAll, "build-runtime-aws": awsAll},
	}
	for prefix, plans := range want {
		t.Run(prefix, func(t *testing.T) {
			got := b.in(t).regionCatalog(prefix)
			if len(got) != len(plans) {
				t.Errorf("plans %v, want %v", keys(got), keys(plans))
			}
			for name, regions := range plans {
				if !slices.Equal(got[name], regions) {
					t.Errorf("%s regions %v, want %v", name, got[name], regions)
				}
			}
		})
	}

	refused := []struct {
		region, planID, params, inDescription string
	}{
		{"cf-eu11", awsPlanID, `{"name":"x","region":"eu-west-2"}`, `region "eu-west-2" is not one of: eu-central-1`},
		{"cf-ch20", azurePlanID, `{"name":"x","region":"westeurope"}`, `region "westeurope" is not one of: switzerlandnorth`},
		{"cf-sa30", gcpPlanID, `{"name":"x","region":"europe-west3"}`, `region "europe-west3" is not one of: me-central2`},
		{"cf-eu11", freePlanID, `{"name":"x","region":"eu-west-2"}`, `region "eu-west-2" is not one of: eu-central-1`},
		{"cf-eu11", sccPlanID, `{"name":"x"}`, "plan sap-converged-cloud has no region in platform region cf-eu11"},
		{"cf-us21", sccPlanID, `{"name":"x"}`, "plan sap-converged-cloud has no region in platform region cf-us21"},
		{"cf-us10", sccPlanID, `{"name":"x","region":"eu-de-2"}`, `region "eu-de-2" is not one of: na-us-1`},
		// Free runs on the platform region's own hyperscaler, AWS or Azure (upstream: "freemium
		// provider for '<provider>' is not supported"), though the catalog offers AWS's regions.
		{"cf-sa30", freePlanID, `{"name":"x"}`, "plan free runs on the platform region's own hyperscaler, one of AWS, Azure; platform region cf-sa30 is hosted on GCP"},
		{"cf-in30", freePlanID, `{"name":"x","region":"eu-central-1"}`, "platform region cf-in30 is hosted on GCP"},
		{"cf-eu01", freePlanID, `{"name":"x"}`, "platform region cf-eu01 is hosted on SAP Cloud Infrastructure"},
	}
	for i, tc := range refused {
		t.Run("refused "+tc.region+" "+tc.inDescription, func(t *testing.T) {
			b := b.in(t)
			id := fmt.Sprintf("pr-refused-%d", i)
			r := b.do(http.MethodPut, "/oauth/"+tc.region+"/v2/service_instances/"+id+"?accepts_incomplete=true",
				provisionBody(tc.planID, tc.params, fmt.Sprintf(`"globalaccount_id":"ga-pr-%d","subaccount_id":"sa-pr","user_id":"u@example.com"`, i)))
			b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
			if !strings.Contains(r.body["description"].(string), tc.inDescription) {
				t.Errorf("description %q lacks %q", r.body["description"], tc.inDescription)
			}
			if n := b.count(`SELECT count(*) FROM instances WHERE instance_id = $1`, id); n != 0 {
				t.Errorf("a refused PUT left an instance")
			}
		})
	}

	// Accepted where offered: the default region of the platform region's
	// list, and a trial forced into the EU access region.
	accepted := []struct{ region, planID, params, providerRegion string }{
		{"cf-eu11", awsPlanID, `{"name":"x"}`, "eu-central-1"},
		{"cf-ch20", azurePlanID, `{"name":"x"}`, "switzerlandnorth"},
		{"cf-sa30", gcpPlanID, `{"name":"x"}`, "me-central2"},
		{"cf-us10", sccPlanID, `{"name":"x"}`, "na-us-1"},
		{"cf-ch20", trialPlanID, `{"name":"x"}`, "switzerlandnorth"},
		// Trials on AWS and GCP: the area's region (the platform region's before the region
		// parameter's, as upstream), forced in EU access and KSA platform regions.
		{"cf-us10", trialPlanID, `{"name":"x","provider":"AWS"}`, "us-east-1"},
		{"cf-eu10", trialPlanID, `{"name":"x","provider":"AWS"}`, "eu-west-1"},
		{"cf-eu10", trialPlanID, `{"name":"x","provider":"GCP","region":"asia"}`, "europe-west3"},
		{"cf-eu20", trialPlanID, `{"name":"x","provider":"GCP","region":"asia"}`, "asia-south1"},
		{"cf-eu11", trialPlanID, `{"name":"x","provider":"AWS"}`, "eu-central-1"},
		{"cf-sa30", trialPlanID, `{"name":"x","provider":"GCP"}`, "me-central2"},
		// An Azure trial in any EU access platform region: Switzerland.
		{"cf-eu11", trialPlanID, `{"name":"x"}`, "switzerlandnorth"},
		{"cf-eu02", trialPlanID, `{"name":"x"}`, "switzerlandnorth"},
		// Free on AWS: eu-central-1 whatever was asked for; on Azure, the region asked for.
		{"cf-us10", freePlanID, `{"name":"x","region":"us-east-1"}`, "eu-central-1"},
		{"cf-eu20", freePlanID, `{"name":"x","region":"westeurope"}`, "westeurope"},
	}
	t.Run("free refused without a platform region in the path", func(t *testing.T) {
		b := b.in(t)
		r := b.do(http.MethodPut, "/oauth/v2/service_instances/pr-free-no-region?accepts_incomplete=true",
			provisionBody(freePlanID, `{"name":"x"}`, `"globalaccount_id":"ga-pr-free","subaccount_id":"sa-pr","user_id":"u@example.com"`))
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if want := "(/oauth/{region}/v2/...), one of AWS, Azure; this request names none"; !strings.Contains(r.body["description"].(string), want) {
			t.Errorf("description %q lacks %q", r.body["description"], want)
		}
	})
	for i, tc := range accepted {
		t.Run("accepted "+tc.region+" "+tc.providerRegion, func(t *testing.T) {
			b := b.in(t)
			id := fmt.Sprintf("pr-accepted-%d", i)
			b.expect(b.do(http.MethodPut, "/oauth/"+tc.region+"/v2/service_instances/"+id+"?accepts_incomplete=true",
				provisionBody(tc.planID, tc.params, fmt.Sprintf(`"globalaccount_id":"ga-pra-%d","subaccount_id":"sa-pr","user_id":"u@example.com"`, i))),
				http.StatusAccepted)
			if got := b.instance(id).ProviderRegion; got != tc.providerRegion {
				t.Errorf("provider region %s, want %s", got, tc.providerRegion)
			}
		})
	}
}

// TestEveryServedSchemaIsDraft04: every plan's create and update schema
// of every platform region's catalog is a valid JSON Schema draft-04
// document, checked against the draft's own meta-schema by a standard
// validator.
func TestEveryServedSchemaIsDraft04(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) {
		c.EnabledPlans = []string{"azure", "aws", "gcp", "azure_lite", "trial", "free", "preview", "sap-converged-cloud",
			"build-runtime-aws", "build-runtime-gcp", "build-runtime-azure"}
	}, io.Discard)
	meta, err := jsonschema.NewCompiler().Compile("http://json-schema.org/draft-04/schema")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, prefix := range []string{"/oauth", "/oauth/cf-eu10", "/oauth/cf-eu11", "/oauth/cf-ch20", "/oauth/cf-sa30", "/oauth/cf-us10",
		"/oauth/cf-eu20", "/oauth/cf-ap10", "/oauth/cf-jp10", "/oauth/cf-us20", "/oauth/cf-in30", "/oauth/cf-us21"} {
		r := b.expect(b.do(http.MethodGet, prefix+"/v2/catalog", ""), http.StatusOK)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(r.raw))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range doc.(map[string]any)["services"].([]any) {
			for _, p := range s.(map[string]any)["plans"].([]any) {
				plan := p.(map[string]any)
				for _, kind := range []string{"create", "update"} {
					schema := plan["schemas"].(map[string]any)["service_instance"].(map[string]any)[kind].(map[string]any)["parameters"]
					if schema.(map[string]any)["$schema"] != "http://json-schema.org/draft-04/schema#" {
						t.Errorf("%s %s %s: $schema %v", prefix, plan["name"], kind, schema.(map[string]any)["$schema"])
					}
					if err := meta.Validate(schema); err != nil {
						t.Errorf("%s %s %s: not a draft-04 schema: %v", prefix, plan["name"], kind, err)
					}
					checked++
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d schemas", checked)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
