package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog/catalogtest"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/logtest"
)

// A pool that passes every rule of additionalWorkerNodePools.
const validPool = `{"name":"gpu","machineType":"Standard_NC4as_T4_v3","haZones":true,"autoScalerMin":3,"autoScalerMax":5,` +
	`"labels":{"team":"ml","example.com/tier":"gpu"},"annotations":{"example.com/owner":"ml team"},` +
	`"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"},{"key":"nvidia.com/gpu","effect":"NoExecute"}]}`

// Two OIDC providers of the list form, every field set.
const twoOIDCProviders = `{"list":[{"clientID":"a","issuerURL":"https://a.example.com","groupsClaim":"groups","groupsPrefix":"a:",` +
	`"usernameClaim":"sub","usernamePrefix":"a-","signingAlgs":["RS256","ES256"],"requiredClaims":["aud=kyma","tier=prod"],` +
	`"encodedJwksArray":"eyJrZXlzIjpbXX0="},{"clientID":"b","issuerURL":"https://b.example.com/realms/x","signingAlgs":["PS512"]}]}`

// parameterCase is one request of the parameters table: valid ones are
// accepted and recorded as sent; invalid ones get a 400 naming the field
// and the rule.
type parameterCase struct {
	name   string
	planID string // default azure
	// params are the request's parameters; a provisioning adds a name when
	// they have none.
	params string
	// ctx replaces the provisioning's context fields.
	ctx string
	// inDescription are substrings of the 400's description: the field and
	// the rule. None means the request is valid.
	inDescription []string
	// recorded is a parameter (by name) and its value as the instance or the
	// update operation must record it; valid cases only.
	recorded map[string]string
}

// provisioningCases has one case per rule of today's provisioning
// parameters (upstream KEB's, section 5 of the facts): a valid form of each
// parameter and an invalid form of each of its rules.
var provisioningCases = []parameterCase{
	// autoScalerMin/Max: 3-300 on paid plans, 2-40 on azure_lite, min <= max.
	{name: "autoscaler at its bounds", params: `{"autoScalerMin":3,"autoScalerMax":300}`,
		recorded: map[string]string{"autoScalerMax": `300`}},
	{name: "autoscaler min below 3", params: `{"autoScalerMin":2}`, inDescription: []string{"autoScalerMin must be at least 3"}},
	{name: "autoscaler max above 300", params: `{"autoScalerMax":301}`, inDescription: []string{"autoScalerMax must be at most 300"}},
	{name: "azure_lite autoscaler at its bounds", planID: azureLitePlanID, params: `{"autoScalerMin":2,"autoScalerMax":40}`,
		recorded: map[string]string{"autoScalerMin": `2`}},
	{name: "azure_lite autoscaler max above 40", planID: azureLitePlanID, params: `{"autoScalerMax":41}`,
		inDescription: []string{"autoScalerMax must be at most 40"}},
	{name: "autoscaler min above max", params: `{"autoScalerMin":30,"autoScalerMax":10}`,
		inDescription: []string{"autoScalerMin must not be greater than autoScalerMax (30 > 10)"}},
	{name: "autoscaler min above the plan's default max", params: `{"autoScalerMin":30}`,
		inDescription: []string{"autoScalerMin must not be greater than autoScalerMax (30 > 20, the plan's default)"}},

	// name: ^[a-zA-Z0-9-]*$, 1-64.
	{name: "name of 64 characters", params: `{"name":"` + strings.Repeat("a", 64) + `"}`, recorded: map[string]string{"name": `"` + strings.Repeat("a", 64) + `"`}},
	{name: "name of 65 characters", params: `{"name":"` + strings.Repeat("a", 65) + `"}`, inDescription: []string{"name must be at most 64 characters"}},
	{name: "name with an underscore", params: `{"name":"my_cluster"}`, inDescription: []string{"name may contain only letters, digits and hyphens"}},
	{name: "empty name", params: `{"name":""}`, inDescription: []string{"name must not be empty"}},

	// machineType: the plan's list.
	{name: "machine type of the plan", params: `{"machineType":"Standard_D8s_v5"}`, recorded: map[string]string{"machineType": `"Standard_D8s_v5"`}},
	{name: "machine type of another provider", params: `{"machineType":"m6i.large"}`, inDescription: []string{`machineType "m6i.large" is not one of`}},
	{name: "version-agnostic machine type", planID: awsPlanID, params: `{"machineType":"mi.large"}`, recorded: map[string]string{"machineType": `"mi.large"`}},
	{name: "GPU machine type for the Kyma pool", params: `{"machineType":"Standard_NC4as_T4_v3"}`, inDescription: []string{"machineType"}},

	// additionalWorkerNodePools.
	{name: "additional pools", params: `{"additionalWorkerNodePools":[` + validPool + `,{"name":"batch","machineType":"Standard_F8s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":1}]}`,
		recorded: map[string]string{"additionalWorkerNodePools": `[` + validPool + `,{"name":"batch","machineType":"Standard_F8s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":1}]`}},
	{name: "an empty pool list", params: `{"additionalWorkerNodePools":[]}`, recorded: map[string]string{"additionalWorkerNodePools": `[]`}},
	{name: "pool without a machine type", params: `{"additionalWorkerNodePools":[{"name":"p1"}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].machineType is required"}},
	{name: "pool name of 16 characters", params: `{"additionalWorkerNodePools":[{"name":"` + strings.Repeat("p", 16) + `","machineType":"Standard_D4s_v5"}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].name must be at most 15 characters"}},
	{name: "pool name not a DNS label", params: `{"additionalWorkerNodePools":[{"name":"GPU_1","machineType":"Standard_D4s_v5"}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].name must be a DNS label"}},
	{name: "pool named like the Kyma pool", params: `{"additionalWorkerNodePools":[{"name":"cpu-worker-0","machineType":"Standard_D4s_v5"}]}`,
		inDescription: []string{`additionalWorkerNodePools[0].name "cpu-worker-0" is the Kyma worker pool's name`}},
	{name: "two pools of one name", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5"},{"name":"p1","machineType":"Standard_D8s_v5"}]}`,
		inDescription: []string{`additionalWorkerNodePools[1].name "p1" is already the name of additionalWorkerNodePools[0]`}},
	{name: "pool machine type not offered", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"g6.xlarge"}]}`,
		inDescription: []string{`additionalWorkerNodePools[0].machineType "g6.xlarge" is not one of`}},
	{name: "HA pool with fewer than 3 nodes", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMin":2}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].autoScalerMin must be at least 3 with haZones true"}},
	{name: "pool min above max", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMin":6,"autoScalerMax":4}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].autoScalerMin must not be greater than autoScalerMax (6 > 4)"}},
	{name: "pool max of 0", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","haZones":false,"autoScalerMin":0,"autoScalerMax":0}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].autoScalerMax must be at least 1"}},
	{name: "pool max above 300", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMax":301}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].autoScalerMax must be at most 300"}},
	{name: "pool label key", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","labels":{"bad key":"x"}}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].labels.bad key is not a label key"}},
	{name: "pool label value", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","labels":{"team":"not valid!"}}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].labels.team is not a label value"}},
	{name: "pool annotation key", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","annotations":{"/x":"y"}}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].annotations./x is not an annotation key"}},
	{name: "pool taint effect", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","taints":[{"key":"k","effect":"Never"}]}]}`,
		inDescription: []string{`additionalWorkerNodePools[0].taints[0].effect "Never" is not one of: NoSchedule, PreferNoSchedule, NoExecute`}},
	{name: "pool taint key", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","taints":[{"key":"a b","effect":"NoSchedule"}]}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].taints[0].key is not a taint key"}},
	{name: "pool taints repeating key and effect", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","taints":[{"key":"k","effect":"NoSchedule"},{"key":"k","value":"v","effect":"NoSchedule"}]}]}`,
		inDescription: []string{`additionalWorkerNodePools[0].taints[1] repeats key "k" with effect NoSchedule of taints[0]`}},
	{name: "azure_lite pool", planID: azureLitePlanID, params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMin":0,"autoScalerMax":40}]}`,
		recorded: map[string]string{"additionalWorkerNodePools": `[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMin":0,"autoScalerMax":40}]`}},
	{name: "azure_lite pool with HA zones", planID: azureLitePlanID, params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","haZones":true}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].haZones is not a supported parameter"}},
	{name: "azure_lite pool above 40", planID: azureLitePlanID, params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMax":41}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].autoScalerMax must be at most 40"}},
	{name: "trial pool", planID: trialPlanID, params: `{"additionalWorkerNodePools":[]}`,
		inDescription: []string{"additionalWorkerNodePools is not available on plan trial"}},

	// oidc: the list form, the legacy object, never both.
	{name: "two OIDC providers", params: `{"oidc":` + twoOIDCProviders + `}`, recorded: map[string]string{"oidc": twoOIDCProviders}},
	{name: "an empty OIDC list", params: `{"oidc":{"list":[]}}`, recorded: map[string]string{"oidc": `{"list":[]}`}},
	{name: "legacy OIDC object", params: `{"oidc":{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["RS256"]}}`,
		recorded: map[string]string{"oidc": `{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["RS256"]}`}},
	{name: "both OIDC forms", params: `{"oidc":{"clientID":"c","issuerURL":"https://i.example.com","list":[]}}`,
		inDescription: []string{"oidc must use either list or the single-provider fields"}},
	{name: "legacy OIDC without client", params: `{"oidc":{"issuerURL":"https://i.example.com"}}`, inDescription: []string{"oidc.clientID is required"}},
	{name: "OIDC issuer over http", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"http://i.example.com","signingAlgs":["RS256"]}]}}`,
		inDescription: []string{"oidc.list[0].issuerURL must be an https:// URL"}},
	{name: "OIDC issuer with a query", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://i.example.com/?x=1","signingAlgs":["RS256"]}]}}`,
		inDescription: []string{"oidc.list[0].issuerURL must not carry user info, a query or a fragment"}},
	{name: "OIDC issuer with user info", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://u:p@i.example.com","signingAlgs":["RS256"]}]}}`,
		inDescription: []string{"oidc.list[0].issuerURL must not carry user info"}},
	{name: "OIDC issuer without a host", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https:///x","signingAlgs":["RS256"]}]}}`,
		inDescription: []string{"oidc.list[0].issuerURL must be an https:// URL with a host"}},
	{name: "listed OIDC provider without algorithms", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":[]}]}}`,
		inDescription: []string{"oidc.list[0].signingAlgs must have at least 1 entries"}},
	{name: "OIDC signing algorithm", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["HS256"]}]}}`,
		inDescription: []string{`oidc.list[0].signingAlgs[0] "HS256" is not one of`}},
	{name: "OIDC required claim without =", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["RS256"],"requiredClaims":["aud"]}]}}`,
		inDescription: []string{"oidc.list[0].requiredClaims[0] must be key=value"}},
	{name: "OIDC issuer with a port but no host", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://:443","signingAlgs":["RS256"]}]}}`,
		inDescription: []string{"oidc.list[0].issuerURL must be an https:// URL with a host"}},
	{name: "legacy OIDC issuer with a port but no host", params: `{"oidc":{"clientID":"c","issuerURL":"https://:443/realms/x"}}`,
		inDescription: []string{"oidc.issuerURL must be an https:// URL with a host"}},
	{name: "OIDC required claim repeated", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["RS256"],"requiredClaims":["aud=a","tier=x","aud=b"]}]}}`,
		inDescription: []string{`oidc.list[0].requiredClaims[2] repeats the claim "aud" of requiredClaims[0]`}},
	{name: "legacy OIDC required claim repeated", params: `{"oidc":{"clientID":"c","issuerURL":"https://i.example.com","requiredClaims":["aud=a","aud=a"]}}`,
		inDescription: []string{`oidc.requiredClaims[1] repeats the claim "aud"`}},
	{name: "OIDC JWKS not base64", params: `{"oidc":{"list":[{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["RS256"],"encodedJwksArray":"{not base64}"}]}}`,
		inDescription: []string{"oidc.list[0].encodedJwksArray must be base64"}},

	// networking (create only).
	{name: "custom networking", params: `{"networking":{"nodes":"10.180.0.0/16","pods":"10.32.0.0/12","services":"10.48.0.0/13"}}`,
		recorded: map[string]string{"networking": `{"nodes":"10.180.0.0/16","pods":"10.32.0.0/12","services":"10.48.0.0/13"}`}},
	{name: "networking not canonical", params: `{"networking":{"nodes":"10.180.1.0/16"}}`, inDescription: []string{`networking.nodes "10.180.1.0/16" is not a network address`}},
	{name: "nodes smaller than /23", params: `{"networking":{"nodes":"10.180.0.0/24"}}`, inDescription: []string{"networking.nodes", "must be /23 or larger"}},
	{name: "nodes overlapping pods", params: `{"networking":{"nodes":"10.96.0.0/16"}}`, inDescription: []string{"networking.nodes 10.96.0.0/16 overlaps networking.pods"}},
	{name: "networking overlapping Gardener's", params: `{"networking":{"nodes":"10.242.0.0/16"}}`, inDescription: []string{"a range Gardener reserves"}},
	{name: "nodes on loopback", params: `{"networking":{"nodes":"127.0.0.0/16"}}`, inDescription: []string{"networking.nodes 127.0.0.0/16 overlaps 127.0.0.0/8, a loopback range no cluster can use"}},
	{name: "pods link-local", params: `{"networking":{"nodes":"10.180.0.0/16","pods":"169.254.0.0/16"}}`, inDescription: []string{"networking.pods 169.254.0.0/16 overlaps 169.254.0.0/16, a link-local range"}},
	{name: "services multicast", params: `{"networking":{"nodes":"10.180.0.0/16","services":"224.1.0.0/16"}}`, inDescription: []string{"networking.services 224.1.0.0/16 overlaps 224.0.0.0/4, a multicast range"}},
	{name: "nodes in this network", params: `{"networking":{"nodes":"0.0.0.0/16"}}`, inDescription: []string{"networking.nodes 0.0.0.0/16 overlaps 0.0.0.0/8"}},
	{name: "nodes at the broadcast address", params: `{"networking":{"nodes":"255.255.254.0/23"}}`, inDescription: []string{"networking.nodes 255.255.254.0/23 overlaps 240.0.0.0/4"}},
	{name: "pods of one address", params: `{"networking":{"nodes":"10.180.0.0/16","pods":"10.100.0.1/32"}}`, inDescription: []string{"networking.pods 10.100.0.1/32 is too small: each node takes a /24 of the pods range"}},
	{name: "services of one address", params: `{"networking":{"nodes":"10.180.0.0/16","services":"10.100.0.1/32"}}`, inDescription: []string{"networking.services 10.100.0.1/32 is too small: the services range must be /24 or larger"}},
	{name: "pods too small for the autoscaler", params: `{"autoScalerMax":20,"networking":{"nodes":"10.180.0.0/16","pods":"10.100.0.0/20"}}`,
		inDescription: []string{"networking.pods 10.100.0.0/20 is too small: each node takes a /24 of the pods range, and the autoscalers allow 20 nodes"}},
	{name: "pods too small for the additional pools", params: `{"autoScalerMax":10,"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","autoScalerMax":10}],"networking":{"nodes":"10.180.0.0/16","pods":"10.100.0.0/20"}}`,
		inDescription: []string{"networking.pods 10.100.0.0/20 is too small: each node takes a /24 of the pods range, and the autoscalers allow 20 nodes"}},
	{name: "pods just large enough", params: `{"autoScalerMax":16,"networking":{"nodes":"10.180.0.0/16","pods":"10.100.0.0/20"}}`,
		recorded: map[string]string{"networking": `{"nodes":"10.180.0.0/16","pods":"10.100.0.0/20"}`}},
	{name: "networking without nodes", params: `{"networking":{"pods":"10.32.0.0/12"}}`, inDescription: []string{"networking.nodes is required"}},

	// ingressFiltering: configured plans, not for external licences.
	{name: "ingress filtering", params: `{"ingressFiltering":true}`, recorded: map[string]string{"ingressFiltering": `true`}},
	{name: "ingress filtering on trial", planID: trialPlanID, params: `{"ingressFiltering":true}`,
		inDescription: []string{"ingressFiltering is not available on plan trial"}},
	{name: "ingress filtering for a customer", params: `{"ingressFiltering":true}`,
		ctx:           `"globalaccount_id":"ga-1","subaccount_id":"sa-1","user_id":"u@example.com","license_type":"CUSTOMER"`,
		inDescription: []string{"ingressFiltering is not available for instances with the external licence type CUSTOMER"}},
	{name: "ingress filtering not a boolean", params: `{"ingressFiltering":"yes"}`, inDescription: []string{"ingressFiltering must be true or false"}},

	// colocateControlPlane: regions with a seed (read from the control plane: TestColocationReadsSeedsFromTheControlPlane).
	{name: "colocated control plane off", params: `{"region":"japaneast","colocateControlPlane":false}`,
		recorded: map[string]string{"colocateControlPlane": `false`}},
	{name: "colocated control plane on trial", planID: trialPlanID, params: `{"colocateControlPlane":true}`,
		inDescription: []string{"colocateControlPlane is not available on plan trial"}},

	// accessControlList: configured plans, CIDRs.
	{name: "access control list", params: `{"accessControlList":{"allowedCIDRs":["203.0.113.0/24","2001:db8::/32"]}}`,
		recorded: map[string]string{"accessControlList": `{"allowedCIDRs":["203.0.113.0/24","2001:db8::/32"]}`}},
	{name: "access control list CIDR", params: `{"accessControlList":{"allowedCIDRs":["203.0.113.7/24"]}}`,
		inDescription: []string{`accessControlList.allowedCIDRs[0] "203.0.113.7/24" is not a network address`}},
	{name: "access control list not a CIDR", params: `{"accessControlList":{"allowedCIDRs":["anywhere"]}}`,
		inDescription: []string{`accessControlList.allowedCIDRs[0] "anywhere" is not a CIDR`}},
	{name: "access control list on trial", planID: trialPlanID, params: `{"accessControlList":{"allowedCIDRs":[]}}`,
		inDescription: []string{"accessControlList is not available on plan trial"}},

	// additionalVolumeSizeGi: 0-max, the Kyma pool and additional pools.
	{name: "additional volume", params: `{"additionalVolumeSizeGi":100,"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","additionalVolumeSizeGi":20}]}`,
		recorded: map[string]string{"additionalVolumeSizeGi": `100`}},
	{name: "additional volume above the plan's maximum", params: `{"additionalVolumeSizeGi":1025}`,
		inDescription: []string{"additionalVolumeSizeGi must be at most 1024"}},
	{name: "negative additional volume of a pool", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","additionalVolumeSizeGi":-1}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].additionalVolumeSizeGi must be at least 0"}},

	// The seed's provider parameters, and nodeCount.
	{name: "zones, roll-out and disk of the seed", params: `{"zones":["1","3"],"maxSurge":2,"maxUnavailable":1,"volumeSizeGb":50}`,
		recorded: map[string]string{"zones": `["1","3"]`, "maxSurge": `2`, "maxUnavailable": `1`, "volumeSizeGb": `50`}},
	{name: "a zone the region lacks", params: `{"zones":["4"]}`, inDescription: []string{`zones[0] "4" is not a zone of region eastus`}},
	{name: "zones and a different zonesCount", params: `{"zones":["1"],"zonesCount":2}`, inDescription: []string{"zones names 1 zones but zonesCount is 2"}},
	{name: "a roll-out that replaces nothing", params: `{"maxSurge":0,"maxUnavailable":0}`, inDescription: []string{"maxSurge must not be 0 when maxUnavailable is 0"}},
	{name: "disk below 50 GB", params: `{"volumeSizeGb":10}`, inDescription: []string{"volumeSizeGb must be at least 50"}},
	{name: "zones on trial", planID: trialPlanID, params: `{"zones":["1"]}`, inDescription: []string{"zones is not available on plan trial"}},
	{name: "nodeCount", params: `{"nodeCount":3}`, inDescription: []string{"nodeCount is not supported", "set autoScalerMin and autoScalerMax instead"}},

	// gvisor: root and per pool, for the global accounts the operator allows (none here).
	{name: "gvisor off", params: `{"gvisor":{"enabled":false}}`, recorded: map[string]string{"gvisor": `{"enabled":false}`}},
	{name: "gvisor for an account not allowed", params: `{"gvisor":{"enabled":true}}`,
		inDescription: []string{"gvisor is not available for global account ga-params-"}},
	{name: "gvisor of a pool for an account not allowed", params: `{"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","gvisor":{"enabled":true}}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].gvisor is not available for global account"}},
	{name: "gvisor on trial", planID: trialPlanID, params: `{"gvisor":{"enabled":true}}`, inDescription: []string{"gvisor is not available on plan trial"}},

	// provider: a trial's hyperscaler.
	{name: "trial on AWS", planID: trialPlanID, params: `{"provider":"AWS"}`, recorded: map[string]string{"provider": `"AWS"`}},
	{name: "trial on a provider not offered", planID: trialPlanID, params: `{"provider":"Alicloud"}`,
		inDescription: []string{`provider "Alicloud" is not one of: Azure, AWS, GCP`}},
	{name: "provider on a paid plan", params: `{"provider":"AWS"}`, inDescription: []string{"provider is not available on plan azure"}},

	{name: "an unknown parameter", params: `{"gardenerShootName":"x"}`, inDescription: []string{"gardenerShootName is not a supported parameter"}},
}

// setupWithGatedParameters is setup with an operator's plans file offering ingressFiltering,
// accessControlList and additionalVolumeSizeGi on every paid plan (out of the box keb offers them
// as upstream's shipped defaults do: ingress filtering on aws, azure and gcp only).
func setupWithGatedParameters(t *testing.T) *bundle {
	t.Helper()
	return setupWith(t, func(c *config.Config) { c.PlansFile = catalogtest.PlansFileWithGatedParameters(t) }, io.Discard)
}

// TestProvisioningParameters sends each case as a PUT to the real server:
// a valid one is accepted and recorded with the instance as sent, an invalid
// one is refused with a 400 naming the field and the rule, and leaves no
// instance and no operation behind.
func TestProvisioningParameters(t *testing.T) {
	t.Parallel()
	b := setupWithGatedParameters(t)
	for i, tc := range provisioningCases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("params-%d", i)
			planID := or(tc.planID, azurePlanID)
			b := b.in(t)
			params := tc.params
			var top map[string]any
			if err := json.Unmarshal([]byte(params), &top); err != nil {
				t.Fatal(err)
			}
			if _, named := top["name"]; !named {
				params = `{"name":"p",` + strings.TrimPrefix(params, "{")
			}
			ctx := tc.ctx
			if ctx == "" {
				ctx = fmt.Sprintf(`"globalaccount_id":"ga-params-%d","subaccount_id":"sa-%d","user_id":"u@example.com"`, i, i)
			}
			r := b.do(http.MethodPut, provisionPath(id), provisionBody(planID, params, ctx))
			if len(tc.inDescription) > 0 {
				b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
				for _, want := range tc.inDescription {
					if !strings.Contains(r.body["description"].(string), want) {
						t.Errorf("description %q lacks %q", r.body["description"], want)
					}
				}
				if n := b.count(`SELECT count(*) FROM instances WHERE instance_id = $1`, id) +
					b.count(`SELECT count(*) FROM operations WHERE instance_id = $1`, id); n != 0 {
					t.Errorf("a refused PUT left %d rows", n)
				}
				return
			}
			b.expect(r, http.StatusAccepted)
			_, stored := b.recorded(id)
			checkRecorded(t, stored, tc.recorded)
		})
	}
}

// checkRecorded compares recorded parameters with the values a case wants
// (JSON-equal).
func checkRecorded(t *testing.T, stored string, want map[string]string) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal([]byte(stored), &got); err != nil {
		t.Fatalf("recorded parameters %s: %v", stored, err)
	}
	for k, v := range want {
		var w any
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			t.Fatalf("case value %s: %v", v, err)
		}
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("recorded %s = %v, want %s (all: %s)", k, got[k], v, stored)
		}
	}
}

// in is the bundle reporting to a subtest (its connection counters start
// at zero).
func (b *bundle) in(t *testing.T) *bundle {
	return &bundle{t: t, srv: b.srv, key: b.key, pool: b.pool, store: b.store, token: b.token, dbURL: b.dbURL, app: b.app, cis: b.cis}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// A running azure instance's pools, for the update cases.
const storedPools = `[{"name":"gpu","machineType":"Standard_NC4as_T4_v3","haZones":true,"autoScalerMin":3,"autoScalerMax":5},` +
	`{"name":"batch","machineType":"Standard_F8s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":2}]`

// updateCases has one case per update rule: what a PATCH may change, how a
// list replaces the stored one, and what stays fixed.
var updateCases = []parameterCase{
	{name: "name", params: `{"name":"renamed"}`, recorded: map[string]string{"name": `"renamed"`}},
	{name: "name with a space", params: `{"name":"re named"}`, inDescription: []string{"name may contain only letters, digits and hyphens"}},
	{name: "autoscaler up to 300", params: `{"autoScalerMax":300}`, recorded: map[string]string{"autoScalerMax": `300`}},
	{name: "autoscaler min above the stored max", params: `{"autoScalerMin":21}`,
		inDescription: []string{"autoScalerMin must not be greater than autoScalerMax (21 > 20, the plan's default)"}},
	{name: "pools omitted are kept", params: `{"autoScalerMax":25}`, recorded: map[string]string{"additionalWorkerNodePools": storedPools}},
	{name: "pool machine type of another provider", params: `{"additionalWorkerNodePools":[{"name":"gpu2","machineType":"g6.xlarge"}]}`,
		inDescription: []string{`"g6.xlarge" is not one of`}},
	{name: "pools replaced", params: `{"additionalWorkerNodePools":[{"name":"gpu2","machineType":"Standard_NC4as_T4_v3","labels":{"a":"b"}},{"name":"batch","machineType":"Standard_F16s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":4}]}`,
		recorded: map[string]string{"additionalWorkerNodePools": `[{"name":"gpu2","machineType":"Standard_NC4as_T4_v3","labels":{"a":"b"}},{"name":"batch","machineType":"Standard_F16s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":4}]`}},
	{name: "pools removed", params: `{"additionalWorkerNodePools":[]}`, recorded: map[string]string{"additionalWorkerNodePools": `[]`}},
	{name: "a pool's haZones switched off", params: `{"additionalWorkerNodePools":[{"name":"gpu","machineType":"Standard_NC4as_T4_v3","haZones":false,"autoScalerMin":1}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].haZones cannot change: pool gpu was created with haZones true"}},
	{name: "a pool's haZones switched on", params: `{"additionalWorkerNodePools":[{"name":"batch","machineType":"Standard_F8s_v2"}]}`,
		inDescription: []string{"additionalWorkerNodePools[0].haZones cannot change: pool batch was created with haZones false"}},
	{name: "OIDC list replaces", params: `{"oidc":` + twoOIDCProviders + `}`, recorded: map[string]string{"oidc": twoOIDCProviders}},
	{name: "OIDC both forms", params: `{"oidc":{"clientID":"c","issuerURL":"https://i.example.com","list":[]}}`,
		inDescription: []string{"oidc must use either list or the single-provider fields"}},
	{name: "ingress filtering off", params: `{"ingressFiltering":false}`, recorded: map[string]string{"ingressFiltering": `false`}},
	{name: "access control list lifted", params: `{"accessControlList":{"allowedCIDRs":[]}}`,
		recorded: map[string]string{"accessControlList": `{"allowedCIDRs":[]}`}},
	{name: "additional volume", params: `{"additionalVolumeSizeGi":10}`, recorded: map[string]string{"additionalVolumeSizeGi": `10`}},
	{name: "region", params: `{"region":"westeurope"}`, inDescription: []string{"region cannot be changed on a running runtime"}},
	{name: "networking", params: `{"networking":{"nodes":"10.180.0.0/16"}}`, inDescription: []string{"networking cannot be changed"}},
	{name: "colocated control plane", params: `{"colocateControlPlane":false}`, inDescription: []string{"colocateControlPlane cannot be changed"}},
	{name: "zones", params: `{"zones":["1"]}`, inDescription: []string{"zones cannot be changed"}},
	// Upstream accepts a roll-out change in an update (issue 37).
	{name: "max surge and unavailable", params: `{"maxSurge":1,"maxUnavailable":2}`, recorded: map[string]string{"maxSurge": `1`, "maxUnavailable": `2`}},
	{name: "volume size", params: `{"volumeSizeGb":100}`, inDescription: []string{"volumeSizeGb cannot be changed"}},
	{name: "nodeCount", params: `{"nodeCount":4}`, inDescription: []string{"nodeCount is not supported", "autoScalerMin"}},
}

// TestUpdateParameters sends each case as a PATCH of a running instance to
// the real server: a valid one starts an update whose operation carries the
// parameters after it (the stored ones with the PATCH's over them), an
// invalid one is refused with a 400 naming the field and the rule and
// changes nothing.
func TestUpdateParameters(t *testing.T) {
	t.Parallel()
	b := setupWithGatedParameters(t)
	const id = "upd-params"
	prov := b.expect(b.do(http.MethodPut, provisionPath(id), provisionBody(azurePlanID,
		`{"name":"c1","ingressFiltering":true,"additionalWorkerNodePools":`+storedPools+`}`, baseCtx)), http.StatusAccepted)
	b.provisioned(id, prov.body["operation"].(string), "rt-params", "")
	for _, tc := range updateCases {
		t.Run(tc.name, func(t *testing.T) {
			b := b.in(t)
			before := b.snapshot(id)
			_, params := b.recorded(id)
			r := b.do(http.MethodPatch, provisionPath(id), updateBody("", tc.params))
			if len(tc.inDescription) > 0 {
				b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
				for _, want := range tc.inDescription {
					if !strings.Contains(r.body["description"].(string), want) {
						t.Errorf("description %q lacks %q", r.body["description"], want)
					}
				}
				b.unchanged(id, before, "a refused PATCH")
				if _, after := b.recorded(id); after != params {
					t.Errorf("a refused PATCH changed the recorded parameters: %s", after)
				}
				return
			}
			op := b.accepted(r)
			checkRecorded(t, string(b.operation(id, op).Request.Parameters), tc.recorded)
			b.finish(op, storage.OperationFailed)
		})
	}
}

// TestUnsupportedParametersIgnored: with APP_BROKER_REJECT_UNSUPPORTED_PARAMETERS
// false (upstream's default), parameters no schema names are accepted,
// logged with the instance and counted per plan and parameter; parameters
// keb knows but the plan does not offer, and every rule of the known ones,
// are still refused; the catalog's schemas no longer close their objects.
func TestUnsupportedParametersIgnored(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	b := setupWith(t, func(c *config.Config) { c.RejectUnsupportedParameters = false }, logs)
	b.expect(b.do(http.MethodPut, provisionPath("lenient-1"), provisionBody(azurePlanID,
		`{"name":"x","gardenerShootName":"y","oidc":{"list":[{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["RS256"],"flavour":1}]}}`,
		"")), http.StatusAccepted)
	if got := b.metric(`keb_unsupported_parameters_total{parameter="gardenerShootName",plan="azure"}`); got != 1 {
		t.Errorf("gardenerShootName counted %v times", got)
	}
	if got := b.metric(`keb_unsupported_parameters_total{parameter="oidc",plan="azure"}`); got != 1 {
		t.Errorf("oidc.list[0].flavour counted %v times under oidc", got)
	}
	if !strings.Contains(logs.String(), "lenient-1") || !strings.Contains(logs.String(), "oidc.list[0].flavour") {
		t.Errorf("no log line names the instance and the parameters:\n%s", logs.String())
	}
	for _, tc := range []struct{ planID, params, want string }{
		{trialPlanID, `{"name":"x","ingressFiltering":true}`, "ingressFiltering is not available on plan trial"},
		{azurePlanID, `{"name":"x","autoScalerMax":301,"other":1}`, "autoScalerMax must be at most 300"},
		{azurePlanID, `{"name":"x","nodeCount":3}`, "nodeCount is not supported"},
	} {
		r := b.do(http.MethodPut, provisionPath("lenient-refused"), provisionBody(tc.planID, tc.params, ""))
		b.expectOSBError(r, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(r.body["description"].(string), tc.want) {
			t.Errorf("description %q lacks %q", r.body["description"], tc.want)
		}
	}
	// Modules still tell their two forms apart.
	b.expect(b.do(http.MethodPut, provisionPath("lenient-2"), provisionBody(azurePlanID,
		`{"name":"x","modules":{"list":[{"name":"istio"}]}}`, `"globalaccount_id":"ga-2","subaccount_id":"sa-2","user_id":"u@example.com"`)), http.StatusAccepted)
	catalog := b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", ""), http.StatusOK)
	if strings.Contains(catalog.raw, `"additionalProperties":false,"properties":{"accessControlList"`) {
		t.Error("the lenient catalog still closes the parameters object")
	}
}

// TestGVisorForAllowedAccounts: a global account in
// APP_GVISOR_ALLOWED_GLOBAL_ACCOUNTS may ask for gVisor, on provisioning and
// on update; another may not.
func TestGVisorForAllowedAccounts(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(c *config.Config) { c.GVisorAllowedGlobalAccounts = []string{"ga-sandbox"} }, io.Discard)
	params := `{"name":"x","gvisor":{"enabled":true},"additionalWorkerNodePools":[{"name":"p1","machineType":"Standard_D4s_v5","gvisor":{"enabled":true}}]}`
	prov := b.expect(b.do(http.MethodPut, provisionPath("gvisor-1"), provisionBody(azurePlanID, params,
		`"globalaccount_id":"ga-sandbox","subaccount_id":"sa-1","user_id":"u@example.com"`)), http.StatusAccepted)
	b.expectOSBError(b.do(http.MethodPut, provisionPath("gvisor-2"), provisionBody(azurePlanID, params,
		`"globalaccount_id":"ga-other","subaccount_id":"sa-1","user_id":"u@example.com"`)), http.StatusBadRequest, "BadRequest")
	b.provisioned("gvisor-1", prov.body["operation"].(string), "rt-gvisor", "")
	op := b.accepted(b.do(http.MethodPatch, provisionPath("gvisor-1"), updateBody("", `{"gvisor":{"enabled":false}}`)))
	checkRecorded(t, string(b.operation("gvisor-1", op).Request.Parameters), map[string]string{"gvisor": `{"enabled":false}`})
}
