package e2e

import (
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/catalog/catalogtest"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/infrasim"
)

// TestTodaysParametersOnTheRealStack: a provisioning with two additional
// worker pools, two OIDC providers, custom networking, an access control
// list and ingress filtering runs to success on the whole stack (keb, the
// simulated infrastructure manager, PostgreSQL, a real kube-apiserver with
// KIM's CRD); the Runtime CR carries each where the contract says and passes
// kubectl's strict validation; GET instance shows them; an update replaces
// the pools and the OIDC providers and lifts the access control list, and
// is applied by the infrastructure manager.
func TestTodaysParametersOnTheRealStack(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) { c.PlansFile = catalogtest.PlansFileWithGatedParameters(t) })
	freshAccount(t, s.kcp, "azure-params")
	// The landscape's seeds, which colocateControlPlane is checked against (maintained outside keb).
	if err := s.kcp.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gardener-seeds-cache", Namespace: kcpNS},
		Data: map[string]string{"azure": "seedRegions: [westeurope]\n"}}); err != nil {
		t.Fatal(err)
	}
	const id = "e2e-params"
	path := "/oauth/v2/service_instances/" + id + "?accepts_incomplete=true"
	code, body := s.call(http.MethodPut, path, `{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
		"context": {"globalaccount_id": "ga-params", "subaccount_id": "sa-params", "user_id": "owner@example.com"},
		"parameters": {"name": "params", "region": "westeurope", "ingressFiltering": true, "colocateControlPlane": true,
			"networking": {"nodes": "10.180.0.0/16", "pods": "10.32.0.0/12", "services": "10.48.0.0/13"},
			"accessControlList": {"allowedCIDRs": ["203.0.113.0/24"]},
			"additionalWorkerNodePools": [
				{"name": "gpu", "machineType": "Standard_NC4as_T4_v3", "autoScalerMin": 3, "autoScalerMax": 6,
				 "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
				{"name": "batch", "machineType": "Standard_F8s_v2", "haZones": false, "autoScalerMin": 0, "autoScalerMax": 2}],
			"oidc": {"list": [
				{"clientID": "a", "issuerURL": "https://a.example.com", "signingAlgs": ["RS256"], "requiredClaims": ["aud=kyma"]},
				{"clientID": "b", "issuerURL": "https://b.example.com", "signingAlgs": ["ES256"]}]}}}`)
	if state, desc := s.waitFor(id, s.accepted("provision", code, body), 4*time.Minute); state != "succeeded" {
		t.Fatalf("provisioning ended %s: %s", state, desc)
	}
	runtimeID := s.runtime(id)["runtimeID"].(string)
	s.strictApply(runtimeID)
	rt := s.runtimeCR(runtimeID)
	sh := rt.Spec.Shoot
	pools := *sh.Provider.AdditionalWorkers
	api := sh.Kubernetes.KubeAPIServer
	if len(pools) != 2 || pools[0].Name != "gpu" || len(pools[0].Zones) != 3 || len(pools[0].Taints) != 1 ||
		pools[1].Name != "batch" || len(pools[1].Zones) != 1 || pools[1].Minimum != 0 {
		t.Errorf("additional workers: %+v", pools)
	}
	if api.AdditionalOIDCConfig == nil || len(*api.AdditionalOIDCConfig) != 2 || (*api.AdditionalOIDCConfig)[0].RequiredClaims["aud"] != "kyma" ||
		api.OIDCConfig != nil || api.ACL == nil || api.ACL.AllowedCIDRs[0] != "203.0.113.0/24" {
		t.Errorf("API server: %+v / %+v / %+v", api.OIDCConfig, api.AdditionalOIDCConfig, api.ACL)
	}
	if sh.Networking.Pods != "10.32.0.0/12" || sh.EnforceSeedLocation == nil || !*sh.EnforceSeedLocation ||
		rt.Spec.Security.Networking.Filter.Ingress == nil || !rt.Spec.Security.Networking.Filter.Ingress.Enabled {
		t.Errorf("networking %+v, seed %v, ingress %+v", sh.Networking, sh.EnforceSeedLocation, rt.Spec.Security.Networking.Filter.Ingress)
	}
	_, inst := s.call(http.MethodGet, "/oauth/v2/service_instances/"+id, "")
	params := inst["parameters"].(map[string]any)
	if len(params["additionalWorkerNodePools"].([]any)) != 2 || params["ingressFiltering"] != true || params["networking"] == nil {
		t.Errorf("GET instance parameters: %v", params)
	}

	code, body = s.call(http.MethodPatch, path, `{"service_id": "`+serviceID+`", "parameters": {
		"additionalWorkerNodePools": [{"name": "gpu2", "machineType": "Standard_NC4as_T4_v3"}],
		"oidc": {"list": [{"clientID": "c", "issuerURL": "https://c.example.com", "signingAlgs": ["PS256"]}]},
		"accessControlList": {"allowedCIDRs": []}}}`)
	if state, desc := s.waitFor(id, s.accepted("update", code, body), 2*time.Minute); state != "succeeded" {
		t.Fatalf("update ended %s: %s", state, desc)
	}
	s.strictApply(runtimeID)
	rt = s.runtimeCR(runtimeID)
	pools = *rt.Spec.Shoot.Provider.AdditionalWorkers
	api = rt.Spec.Shoot.Kubernetes.KubeAPIServer
	if len(pools) != 1 || pools[0].Name != "gpu2" || api.ACL != nil || len(*api.AdditionalOIDCConfig) != 1 ||
		*(*api.AdditionalOIDCConfig)[0].ClientID != "c" {
		t.Errorf("after the update: pools %+v, OIDC %+v, ACL %+v", pools, api.AdditionalOIDCConfig, api.ACL)
	}
}
