package provisioning_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/catalog"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// updateGolden rewrites testdata/runtime-cr/*.yaml from this run: make golden-runtime-cr.
var updateGolden = flag.Bool("update", false, "rewrite the golden Runtime CRs under testdata/runtime-cr")

// TestRuntimeCRGolden: a provisioning request (plan, platform region,
// parameters, context) → the whole Runtime CR create_runtime writes, as the
// API server keeps it after the real CRD's strict validation, compared with
// testdata/runtime-cr/<name>.yaml. The request is resolved by the catalog as
// the broker resolves it; IDs are fixed so that the file is the same on
// every run (the zones are chosen per runtime ID).
func TestRuntimeCRGolden(t *testing.T) {
	t.Parallel()
	cat := processtest.Catalog(t)
	// A landscape's settings, where upstream's shipped ones write nothing.
	landscape := provisioning.RuntimeSettings{KubernetesVersion: "1.33.4", MachineImage: "gardenlinux",
		MachineImageVersion: "1592.9.0", ControlPlaneFailureTolerance: "zone", MaxPods: 200, MaxPodsGlobalAccounts: []string{"ga-1"}}
	tests := []struct {
		name, planID, platformRegion, params, context string
		// settings, when set, replace keb's shipped ones.
		settings *provisioning.RuntimeSettings
		// refused: the control plane's CRD refuses the CR (a provider type outside contracts.md's
		// enum aws, azure, gcp, openstack): create_runtime fails at once saying so, and the golden
		// is the CR keb submitted.
		refused bool
	}{
		{name: "azure-defaults", planID: catalog.AzurePlanID, platformRegion: "cf-eu20", params: `{"name":"c1"}`},
		{name: "aws-ca-central-1-legacy-oidc", planID: catalog.AWSPlanID, platformRegion: "cf-eu10",
			params: `{"name":"c1","region":"ca-central-1","machineType":"mi.xlarge","oidc":{"clientID":"abc","issuerURL":"https://id.example"}}`},
		{name: "aws-external-ingress", planID: catalog.AWSPlanID, platformRegion: "cf-us10",
			params: `{"name":"c1","region":"us-east-1","ingressFiltering":true,"administrators":["a@example.com"]}`, context: `{"license_type":"CUSTOMER"}`},
		{name: "gcp-pools-oidc-list", planID: catalog.GCPPlanID, platformRegion: "cf-eu30",
			params: `{"name":"c1","oidc":{"list":[{"clientID":"a","issuerURL":"https://a.example.com","signingAlgs":["RS256"]}]},` +
				`"additionalWorkerNodePools":[{"name":"ha","machineType":"n2-standard-4"},{"name":"single","machineType":"n2-standard-4","haZones":false,"autoScalerMin":1}]}`},
		{name: "sap-converged-cloud-eu-de-1", planID: catalog.SapConvergedCloudPlanID, platformRegion: "cf-eu20", params: `{"name":"c1"}`},
		{name: "sap-converged-cloud-ap-jp-1", planID: catalog.SapConvergedCloudPlanID, platformRegion: "cf-jp10", params: `{"name":"c1"}`},
		{name: "azure-lite-pool", planID: catalog.AzureLitePlanID, platformRegion: "cf-eu20",
			params: `{"name":"c1","region":"westeurope","additionalWorkerNodePools":[{"name":"p","machineType":"Standard_D4s_v5","autoScalerMin":0}]}`},
		{name: "trial", planID: catalog.TrialPlanID, platformRegion: "cf-eu10", params: `{"name":"c1"}`},
		{name: "free-aws", planID: catalog.FreePlanID, platformRegion: "cf-eu10", params: `{"name":"c1"}`},
		{name: "aws-defaults", planID: catalog.AWSPlanID, platformRegion: "cf-eu10", params: `{"name":"c1"}`},
		// Accepted as upstream accepts it; no networking.dualStack in the CR: KIM's CRD has none.
		{name: "aws-dual-stack", planID: catalog.AWSPlanID, platformRegion: "cf-eu10",
			params: `{"name":"c1","networking":{"nodes":"10.180.0.0/16","dualStack":true},"auditLogAccess":true}`},
		{name: "aws-landscape-settings", planID: catalog.AWSPlanID, platformRegion: "cf-eu10", settings: &landscape,
			params: `{"name":"c1","additionalWorkerNodePools":[{"name":"p","machineType":"mi.2xlarge"}]}`},
		{name: "azure-lite-landscape-settings", planID: catalog.AzureLitePlanID, platformRegion: "cf-eu20", settings: &landscape,
			params: `{"name":"c1"}`},
		{name: "trial-aws", planID: catalog.TrialPlanID, platformRegion: "cf-eu10", params: `{"name":"c1","provider":"AWS"}`},
		{name: "trial-eu-access", planID: catalog.TrialPlanID, platformRegion: "cf-eu11", params: `{"name":"c1"}`},
		{name: "trial-gcp-ksa", planID: catalog.TrialPlanID, platformRegion: "cf-sa30", params: `{"name":"c1","provider":"GCP"}`},
		{name: "free-aws-region-asked", planID: catalog.FreePlanID, platformRegion: "cf-us10", params: `{"name":"c1","region":"us-east-1"}`},
		{name: "free-azure", planID: catalog.FreePlanID, platformRegion: "cf-eu20", params: `{"name":"c1","region":"westeurope"}`},
		{name: "alicloud-defaults", planID: catalog.AlicloudPlanID, platformRegion: "cf-eu10", params: `{"name":"c1"}`, refused: true},
		{name: "build-runtime-alicloud-eu-west-1", planID: catalog.BuildRuntimeAlicloudPlanID, platformRegion: "cf-eu40",
			params: `{"name":"c1","region":"eu-west-1","machineType":"ecs.g9i.2xlarge"}`, refused: true},
		{name: "gdch-defaults", planID: catalog.GDCHPlanID, platformRegion: "cf-eu10", params: `{"name":"c1"}`, refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params, err := cat.ValidateParameters(tc.planID, tc.platformRegion, json.RawMessage(tc.params))
			if err != nil {
				t.Fatalf("the request's parameters: %v", err)
			}
			res, err := cat.Resolve(tc.planID, tc.platformRegion, params)
			if err != nil {
				t.Fatal(err)
			}
			inst := processtest.Instance(t, tc.planID)
			inst.InstanceID, inst.GlobalAccountID, inst.SubAccountID = "instance-"+tc.name, "ga-1", "sa-1"
			inst.RuntimeID, inst.ShootName, inst.PlatformRegion = "4a3f3c0e-0b5e-4c63-9f2b-"+tc.name, "c-4a3f3c0", tc.platformRegion
			inst.Parameters = json.RawMessage(tc.params)
			if tc.context != "" {
				inst.Context = json.RawMessage(tc.context)
			}
			op := processtest.Operation(storage.OperationTypeProvision, inst)
			op.Record = process.Record{RuntimeID: inst.RuntimeID, ShootName: inst.ShootName, Provider: res.Provider,
				Region: res.Region, ProviderRegion: res.ProviderRegion, MachineType: res.MachineType,
				AutoScalerMin: res.AutoScalerMin, AutoScalerMax: res.AutoScalerMax, ZonesCount: res.ZonesCount,
				HyperscalerSecret: "binding-" + res.Provider}
			ns := newNamespace(t)
			c := kcpClient(t)
			cfg := testConfig(ns)
			if tc.settings != nil {
				cfg.Runtime = *tc.settings
			}
			step := &provisioning.CreateRuntime{KCP: c, Catalog: cat, Config: cfg}
			out, err := step.Run(t.Context(), op)
			u := &unstructured.Unstructured{}
			if tc.refused {
				if err != nil || out.Failure == nil || !strings.Contains(out.Failure.Error(), "the control plane refuses the Runtime CR") ||
					!strings.Contains(out.Failure.Error(), `"`+res.Provider+`"`) {
					t.Fatalf("create_runtime of a %s runtime: %+v, %v", res.Provider, out, err)
				}
				submitted, err := runtime.DefaultUnstructuredConverter.ToUnstructured(
					provisioning.DesiredRuntime(op, params, cat, cfg.Namespace, cfg.Runtime))
				if err != nil {
					t.Fatal(err)
				}
				u.Object = submitted
				u.SetGroupVersionKind(im.GroupVersion.WithKind("Runtime"))
			} else {
				processtest.MustOutcome(t, "create_runtime", processtest.Done, out, err)
				u.SetGroupVersionKind(im.GroupVersion.WithKind("Runtime"))
				if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: inst.RuntimeID}, u); err != nil {
					t.Fatal(err)
				}
			}
			cr := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
				"metadata": map[string]any{"name": u.GetName(), "namespace": "kcp-system", "labels": u.GetLabels()},
				"spec":     u.Object["spec"]}
			got, err := yaml.Marshal(cr)
			if err != nil {
				t.Fatal(err)
			}
			header := "# Generated by TestRuntimeCRGolden (make golden-runtime-cr); do not edit.\n# request: plan " +
				tc.planID + ", platform region " + tc.platformRegion + ", parameters " + tc.params
			if tc.context != "" {
				header += ", context " + tc.context
			}
			if tc.settings != nil {
				header += fmt.Sprintf("\n# settings: %+v", *tc.settings)
			}
			if tc.refused {
				header += "\n# refused by the control plane's CRD (provider types aws, azure, gcp, openstack): the CR keb submits"
			}
			got = append([]byte(header+"\n"), got...)
			path := filepath.Join("testdata", "runtime-cr", tc.name+".yaml")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (make golden-runtime-cr writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the Runtime CR differs from %s (make golden-runtime-cr rewrites it; review the diff):\n got:\n%s", path, got)
			}
		})
	}
}
