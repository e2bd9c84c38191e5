package provisioning_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// TestCreateRuntimeParameters: each of today's parameters lands in the
// Runtime CR where KIM reads it, and the CR passes the API server's strict
// validation of KIM's CRD. want maps a path below spec (dot-separated,
// list indexes as numbers) to the JSON it must hold; "absent" means the
// field is not there.
// defaultOIDC is resources/oidc.yaml's provider in the Runtime CR.
const defaultOIDC = `{"clientID":"9bd05ed7-a930-44e6-8c79-e6defeb7dec9","issuerURL":"https://kymatest.accounts400.ondemand.com",` +
	`"groupsClaim":"groups","groupsPrefix":"-","signingAlgs":["RS256"],"usernameClaim":"sub","usernamePrefix":"-"}`

func TestCreateRuntimeParameters(t *testing.T) {
	t.Parallel()
	azure := process.Record{Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope",
		MachineType: "Standard_D4s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3}
	// azurePinned: the Kyma pool's zones chosen (as a re-run finds them), so
	// that the pools' zones, taken from them, are known.
	azurePinned := azure
	azurePinned.Zones = []string{"3", "1", "2"}
	tests := []struct {
		name   string
		planID string
		params string
		// context is the instance's stored OSB context ("" for none).
		context string
		data    process.Record
		want    map[string]string
	}{
		{name: "additional worker pools", params: `{"name":"x","additionalWorkerNodePools":[` +
			`{"name":"gpu","machineType":"Standard_NC4as_T4_v3","autoScalerMin":3,"autoScalerMax":5,"additionalVolumeSizeGi":20,` +
			`"labels":{"team":"ml"},"annotations":{"example.com/owner":"ml"},"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]},` +
			`{"name":"batch","machineType":"Standard_F8s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":2}]}`,
			data: azurePinned,
			want: map[string]string{
				"shoot.provider.additionalWorkers.0": `{"name":"gpu","machine":{"type":"Standard_NC4as_T4_v3","image":{"name":"","version":""}},"minimum":3,"maximum":5,` +
					`"maxSurge":3,"maxUnavailable":0,"zones":["3","1","2"],"volume":{"type":"StandardSSD_LRS","size":"100Gi"},"labels":{"team":"ml"},` +
					`"annotations":{"example.com/owner":"ml"},"taints":[{"key":"nvidia.com/gpu","value":"present","effect":"NoSchedule"}]}`,
				"shoot.provider.additionalWorkers.1": `{"name":"batch","machine":{"type":"Standard_F8s_v2","image":{"name":"","version":""}},"minimum":0,"maximum":2,` +
					`"maxSurge":1,"maxUnavailable":0,"zones":["3"],"volume":{"type":"StandardSSD_LRS","size":"80Gi"}}`,
				"shoot.provider.workers.0.name": `"cpu-worker-0"`,
			}},
		{name: "pool defaults", params: `{"name":"x","additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D8s_v5"}]}`,
			data: azurePinned,
			want: map[string]string{"shoot.provider.additionalWorkers.0.minimum": `3`, "shoot.provider.additionalWorkers.0.maximum": `20`,
				"shoot.provider.additionalWorkers.0.zones": `["3","1","2"]`, "shoot.provider.workers.0.zones": `["3","1","2"]`}},
		{name: "azure_lite pool in one zone", planID: catalog.AzureLitePlanID,
			params: `{"name":"x","additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D4s_v5","autoScalerMin":0}]}`,
			data: process.Record{Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 2, AutoScalerMax: 10, ZonesCount: 1, Zones: []string{"2"}},
			want: map[string]string{"shoot.provider.additionalWorkers.0.zones": `["2"]`, "shoot.provider.additionalWorkers.0.maximum": `10`,
				"shoot.provider.additionalWorkers.0.minimum": `0`}},
		{name: "no pools", params: `{"name":"x"}`, want: map[string]string{"shoot.provider.additionalWorkers": "absent"}},
		{name: "two OIDC providers", params: `{"name":"x","oidc":{"list":[{"clientID":"a","issuerURL":"https://a.example.com",` +
			`"groupsClaim":"groups","groupsPrefix":"a:","usernameClaim":"sub","usernamePrefix":"a-","signingAlgs":["RS256"],` +
			`"requiredClaims":["aud=kyma","tier=a=b"],"encodedJwksArray":"eyJrZXlzIjpbXX0="},` +
			`{"clientID":"b","issuerURL":"https://b.example.com","signingAlgs":["ES256"]}]}}`,
			want: map[string]string{
				"shoot.kubernetes.kubeAPIServer.additionalOidcConfig": `[{"clientID":"a","issuerURL":"https://a.example.com",` +
					`"groupsClaim":"groups","groupsPrefix":"a:","usernameClaim":"sub","usernamePrefix":"a-","signingAlgs":["RS256"],` +
					`"requiredClaims":{"aud":"kyma","tier":"a=b"}},{"clientID":"b","issuerURL":"https://b.example.com","groupsPrefix":"-","signingAlgs":["ES256"]}]`,
				"shoot.kubernetes.kubeAPIServer.oidcConfig": "absent",
			}},
		{name: "an empty OIDC list", params: `{"name":"x","oidc":{"list":[]}}`,
			want: map[string]string{"shoot.kubernetes.kubeAPIServer.additionalOidcConfig": `[]`, "shoot.kubernetes.kubeAPIServer.oidcConfig": "absent"}},
		{name: "legacy OIDC merged over the default", params: `{"name":"x","oidc":{"clientID":"c","issuerURL":"https://i.example.com","signingAlgs":["ES256"],"requiredClaims":["aud=kyma"]}}`,
			want: map[string]string{"shoot.kubernetes.kubeAPIServer.oidcConfig": "absent",
				"shoot.kubernetes.kubeAPIServer.additionalOidcConfig": `[{"clientID":"c","issuerURL":"https://i.example.com","groupsClaim":"groups",` +
					`"groupsPrefix":"-","signingAlgs":["ES256"],"usernameClaim":"sub","usernamePrefix":"-","requiredClaims":{"aud":"kyma"}}]`}},
		// Upstream KEB: the default OIDC provider (resources/oidc.yaml) when the
		// parameter is absent or empty; a legacy object merged over it.
		{name: "no OIDC: the default", params: `{"name":"x"}`, want: map[string]string{"shoot.kubernetes.kubeAPIServer": `{"additionalOidcConfig":[` + defaultOIDC + `]}`}},
		{name: "an empty OIDC object: the default", params: `{"name":"x","oidc":{}}`,
			want: map[string]string{"shoot.kubernetes.kubeAPIServer.additionalOidcConfig": `[` + defaultOIDC + `]`}},
		{name: "ingress filtering", params: `{"name":"x","ingressFiltering":true}`,
			want: map[string]string{"security.networking.filter.ingress": `{"enabled":true}`}},
		// Upstream KEB writes the ingress filter's false explicitly.
		{name: "no ingress filtering", params: `{"name":"x"}`, want: map[string]string{"security.networking.filter.ingress": `{"enabled":false}`}},
		{name: "ingress filtering for an external instance: false", params: `{"name":"x","ingressFiltering":true}`, context: `{"license_type":"PARTNER"}`,
			want: map[string]string{"security.networking.filter.ingress": `{"enabled":false}`, "shoot.licenceType": "absent",
				"security.networking.filter.egress": `{"enabled":false}`}},
		{name: "networking type calico", params: `{"name":"x"}`, want: map[string]string{"shoot.networking.type": `"calico"`}},
		{name: "colocated control plane", params: `{"name":"x","colocateControlPlane":true}`,
			want: map[string]string{"shoot.enforceSeedLocation": `true`}},
		{name: "access control list", params: `{"name":"x","accessControlList":{"allowedCIDRs":["203.0.113.0/24"]}}`,
			want: map[string]string{"shoot.kubernetes.kubeAPIServer.acl": `{"allowedCIDRs":["203.0.113.0/24"]}`}},
		{name: "an empty access control list", params: `{"name":"x","accessControlList":{"allowedCIDRs":[]}}`,
			want: map[string]string{"shoot.kubernetes.kubeAPIServer.acl": "absent"}},
		{name: "additional volume", params: `{"name":"x","additionalVolumeSizeGi":100}`,
			want: map[string]string{"shoot.provider.workers.0.volume": `{"type":"StandardSSD_LRS","size":"180Gi"}`}},
		{name: "version-agnostic machine types", planID: catalog.AWSPlanID,
			params: `{"name":"x","machineType":"mi.xlarge","additionalWorkerNodePools":[{"name":"p","machineType":"mi.2xlarge"}]}`,
			data: process.Record{Provider: "aws", Region: "eu-central-1", ProviderRegion: "eu-central-1",
				MachineType: "mi.xlarge", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
			want: map[string]string{"shoot.provider.workers.0.machine": `{"type":"m7i.xlarge","image":{"name":"","version":""}}`,
				"shoot.provider.additionalWorkers.0.machine": `{"type":"m7i.2xlarge","image":{"name":"","version":""}}`}},
		{name: "gVisor", params: `{"name":"x","gvisor":{"enabled":true},"additionalWorkerNodePools":[` +
			`{"name":"p","machineType":"Standard_D8s_v5","gvisor":{"enabled":true}},{"name":"q","machineType":"Standard_D8s_v5","gvisor":{"enabled":false}}]}`,
			want: map[string]string{"shoot.provider.workers.0.cri": `{"name":"containerd","containerRuntimes":[{"type":"gvisor"}]}`,
				"shoot.provider.additionalWorkers.0.cri": `{"name":"containerd","containerRuntimes":[{"type":"gvisor"}]}`,
				"shoot.provider.additionalWorkers.1.cri": "absent"}},
		{name: "the seed's zones, roll-out and disk", params: `{"name":"x","zones":["2","3"],"maxSurge":1,"maxUnavailable":1,"volumeSizeGb":50}`,
			data: process.Record{Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 2},
			want: map[string]string{"shoot.provider.workers.0.zones": `["2","3"]`, "shoot.provider.workers.0.maxSurge": `1`,
				"shoot.provider.workers.0.maxUnavailable": `1`, "shoot.provider.workers.0.volume": `{"type":"StandardSSD_LRS","size":"50Gi"}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			planID := tc.planID
			if planID == "" {
				planID = catalog.AzurePlanID
			}
			data := tc.data
			if data.Provider == "" {
				data = azure
			}
			op := initializedOp(t, planID, tc.params, data)
			if tc.context != "" {
				op.Instance.Context = json.RawMessage(tc.context)
			}
			step := &provisioning.CreateRuntime{KCP: c, Catalog: processtest.Catalog(t), Config: testConfig(ns)}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "create_runtime", processtest.Done, res, err)
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(im.GroupVersion.WithKind("Runtime"))
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: strings.ToLower(op.Record.RuntimeID)}, u); err != nil {
				t.Fatal(err)
			}
			checkPaths(t, u.Object["spec"], tc.want)
		})
	}
}

// checkPaths compares the values at dot-separated paths of a decoded
// object with the JSON each must hold, or "absent".
func checkPaths(t *testing.T, obj any, want map[string]string) {
	t.Helper()
	for path, w := range want {
		got, found := at(obj, path)
		if w == "absent" {
			if found {
				t.Errorf("%s = %v, want it absent", path, got)
			}
			continue
		}
		var wv any
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			t.Fatalf("want %s: %v", w, err)
		}
		// Compare as JSON decodes both (numbers as float64).
		b, _ := json.Marshal(got)
		var gv any
		_ = json.Unmarshal(b, &gv)
		if !found || !reflect.DeepEqual(gv, wv) {
			t.Errorf("%s = %s, want %s", path, b, w)
		}
	}
}

func at(obj any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch o := obj.(type) {
		case map[string]any:
			v, ok := o[k]
			if !ok {
				return nil, false
			}
			obj = v
		case []any:
			i := -1
			_ = json.Unmarshal([]byte(k), &i)
			if i < 0 || i >= len(o) {
				return nil, false
			}
			obj = o[i]
		default:
			return nil, false
		}
	}
	return obj, true
}

// TestResolvedParametersShowTodaysParameters: what GET instance shows
// after provisioning carries today's parameters as given, and leaves out
// those not given.
func TestResolvedParametersShowTodaysParameters(t *testing.T) {
	t.Parallel()
	op := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure", Region: "westeurope",
		ProviderRegion: "westeurope", MachineType: "Standard_D4s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3})
	var params catalog.ProvisioningParameters
	raw := `{"name":"x","zones":["1","3"],"ingressFiltering":true,"oidc":{"list":[]},` +
		`"additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D8s_v5"}],"networking":{"nodes":"10.180.0.0/16"}}`
	if err := json.Unmarshal([]byte(raw), &params); err != nil {
		t.Fatal(err)
	}
	got, err := provisioning.ResolvedJSON(op, params, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	checkPaths(t, doc, map[string]string{
		"zones": `["1","3"]`, "ingressFiltering": `true`, "oidc": `{"list":[]}`,
		"additionalWorkerNodePools": `[{"name":"p","machineType":"Standard_D8s_v5"}]`, "networking": `{"nodes":"10.180.0.0/16"}`,
		"accessControlList": "absent", "colocateControlPlane": "absent", "volumeSizeGb": "absent",
	})
}
