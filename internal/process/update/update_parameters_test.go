package update_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/catalog/catalogtest"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestUpdateParametersInRuntimeCR: a PATCH's parameters reach the Runtime
// CR as upstream applies them: the pool list replaces the pools (a renamed
// pool is removed and created, labels are overwritten, [] removes them
// all), an OIDC list replaces the legacy provider, an empty access control
// list lifts the restriction, ingress filtering switches off.
func TestUpdateParametersInRuntimeCR(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	ns := processtest.Namespace(t, c, "updp")
	processtest.EnsureNamespace(t, c, controlplane.Namespace)
	cfg := testConfig()
	cfg.Namespace = ns
	cat := catalogtest.WithGatedParameters(t)
	steps := map[string]process.Step{}
	for _, s := range update.Pipeline(update.Deps{Config: cfg, Catalog: cat, KCP: c, Accounts: &tenantAccounts{}, Store: &recorder{}}).Steps {
		steps[s.Name()] = s
	}

	inst := processtest.Instance(t, catalog.AzurePlanID)
	inst.RuntimeID, inst.ClusterID, inst.ShootName = uuid.NewString(), uuid.NewString(), "c-params"
	inst.PlatformRegion, inst.Provider, inst.ProviderRegion = "cf-eu10", "azure", "westeurope"
	inst.State = storage.RuntimeSucceeded
	inst.Parameters = json.RawMessage(`{"name":"x","ingressFiltering":true,"accessControlList":{"allowedCIDRs":["203.0.113.0/24"]},` +
		`"oidc":{"clientID":"c","issuerURL":"https://i.example.com"},"additionalWorkerNodePools":[` +
		`{"name":"gpu","machineType":"Standard_NC4as_T4_v3","labels":{"old":"label"}},` +
		`{"name":"batch","machineType":"Standard_F8s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":2,"labels":{"old":"label"}}]}`)
	prov := processtest.Operation(storage.OperationTypeProvision, inst)
	prov.Record = process.Record{RuntimeID: inst.RuntimeID, ShootName: inst.ShootName, Provider: "azure", Region: "westeurope",
		ProviderRegion: "westeurope", MachineType: "Standard_D4s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3,
		HyperscalerSecret: "azure-binding"}
	create := &provisioning.CreateRuntime{KCP: c, Catalog: cat, Config: provisioning.Config{Namespace: ns}}
	runStep(t, create, prov, processtest.Done)
	rt := getRuntime(t, c, ns, prov)
	if rt.Spec.Shoot.Provider.AdditionalWorkers == nil || len(*rt.Spec.Shoot.Provider.AdditionalWorkers) != 2 ||
		rt.Spec.Shoot.Kubernetes.KubeAPIServer.AdditionalOIDCConfig == nil || rt.Spec.Shoot.Kubernetes.KubeAPIServer.ACL == nil {
		t.Fatalf("provisioned Runtime CR %+v", rt.Spec.Shoot)
	}
	runtimetest.SetStatus(t, c, rt, infrastructuremanager.StateReady, infrastructuremanager.ReasonShootCreationCompleted, "Shoot creation completed")

	patch := func(params string) *infrastructuremanager.Runtime {
		t.Helper()
		op := processtest.Operation(storage.OperationTypeUpdate, inst)
		op.Request = &storage.UpdateRequest{PlanID: inst.PlanID, PlanName: inst.PlanName, Parameters: json.RawMessage(params)}
		runStep(t, steps["update_initialization"], op, processtest.Done)
		runStep(t, steps["update_runtime"], op, processtest.Done)
		return getRuntime(t, c, ns, op)
	}

	rt = patch(`{"name":"x","ingressFiltering":false,"accessControlList":{"allowedCIDRs":[]},` +
		`"oidc":{"list":[{"clientID":"a","issuerURL":"https://a.example.com","signingAlgs":["RS256"]}]},"additionalWorkerNodePools":[` +
		`{"name":"batch","machineType":"Standard_F16s_v2","haZones":false,"autoScalerMin":0,"autoScalerMax":4,"labels":{"new":"label"}},` +
		`{"name":"gpu2","machineType":"Standard_NC4as_T4_v3"}]}`)
	pools := *rt.Spec.Shoot.Provider.AdditionalWorkers
	if len(pools) != 2 || pools[0].Name != "batch" || pools[0].Machine.Type != "Standard_F16s_v2" || pools[0].Maximum != 4 ||
		len(pools[0].Labels) != 1 || pools[0].Labels["new"] != "label" || pools[1].Name != "gpu2" || len(pools[1].Zones) != 3 {
		t.Errorf("pools after the PATCH: %+v", pools)
	}
	api := rt.Spec.Shoot.Kubernetes.KubeAPIServer
	if api.OIDCConfig != nil || api.AdditionalOIDCConfig == nil || len(*api.AdditionalOIDCConfig) != 1 ||
		*(*api.AdditionalOIDCConfig)[0].ClientID != "a" {
		t.Errorf("OIDC after the PATCH: %+v / %+v", api.OIDCConfig, api.AdditionalOIDCConfig)
	}
	if api.ACL != nil {
		t.Errorf("ACL after an empty list: %+v", api.ACL)
	}
	if in := rt.Spec.Security.Networking.Filter.Ingress; in == nil || in.Enabled {
		t.Errorf("ingress filter after switching it off: %+v", in)
	}
	if w := rt.Spec.Shoot.Provider.Workers; len(w) != 1 || w[0].Name != "cpu-worker-0" {
		t.Errorf("the Kyma worker pool: %+v", w)
	}

	// A legacy object merges over the first provider; the others stay.
	rt = patch(`{"name":"x","oidc":{"clientID":"c2","usernamePrefix":"u-"}}`)
	api = rt.Spec.Shoot.Kubernetes.KubeAPIServer
	if got := processtest.MustJSON(t, api.AdditionalOIDCConfig); api.OIDCConfig != nil ||
		got != `[{"clientID":"c2","issuerURL":"https://a.example.com","signingAlgs":["RS256"],"usernamePrefix":"u-"}]` {
		t.Errorf("OIDC after a legacy object over the list: %s (oidcConfig %+v)", got, api.OIDCConfig)
	}

	rt = patch(`{"name":"x","gvisor":{"enabled":true}}`)
	if cri := rt.Spec.Shoot.Provider.Workers[0].CRI; cri == nil || len(cri.ContainerRuntimes) != 1 || cri.ContainerRuntimes[0].Type != "gvisor" {
		t.Errorf("the Kyma pool's container runtime with gVisor: %+v", cri)
	}
	rt = patch(`{"name":"x","gvisor":{"enabled":false}}`)
	if cri := rt.Spec.Shoot.Provider.Workers[0].CRI; cri == nil || cri.Name != "containerd" || len(cri.ContainerRuntimes) != 0 {
		t.Errorf("the Kyma pool's container runtime without gVisor: %+v", cri)
	}

	rt = patch(`{"name":"x","additionalWorkerNodePools":[]}`)
	if p := rt.Spec.Shoot.Provider.AdditionalWorkers; p == nil || len(*p) != 0 {
		t.Errorf("pools after []: %+v", p)
	}
}
