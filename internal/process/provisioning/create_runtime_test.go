package provisioning_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/overrides"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/resources"
)

// initializedOp is an operation as the steps before create_runtime leave it.
func initializedOp(t *testing.T, planID, params string, d process.Record) *process.Operation {
	t.Helper()
	op := newOp(t, planID, params)
	if d.RuntimeID == "" {
		d.RuntimeID = uuid.NewString()
	}
	d.ShootName = "c-" + strings.ReplaceAll(d.RuntimeID, "-", "")[:7]
	d.ClusterID = uuid.NewString()
	if d.KymaVersion == "" {
		d.KymaVersion = "2.20.0"
	}
	d.OverridesSecret = overrides.SecretName(d.RuntimeID)
	d.HyperscalerSecret = "secret-" + d.Provider
	d.Components = []string{"cluster-essentials", "istio", "monitoring"}
	op.Record = d
	op.Instance.RuntimeID, op.Instance.ShootName, op.Instance.ClusterID = d.RuntimeID, d.ShootName, d.ClusterID
	return op
}

// upstreamProviderLabel is upstream KEB's kyma-project.io/provider value per
// provider type (common/runtime/model.go).
var upstreamProviderLabel = map[string]string{"aws": "AWS", "azure": "Azure", "gcp": "GCP", "openstack": "SapConvergedCloud"}

func TestCreateRuntime(t *testing.T) {
	t.Parallel()
	withImage := catalogWithMachineImage(t)
	tests := []struct {
		name    string
		planID  string
		params  string
		context string
		catalog *catalog.Catalog
		data    process.Record
		// wantZonesFrom are the region's zones: the CR names wantZoneCount of them.
		wantZonesFrom []string
		wantZoneCount int
		wantAdmins    []string
		// wantPurpose, wantNodes and wantEgress default to development, 10.250.0.0/16 and true.
		wantPurpose, wantNodes, wantPods, wantImage string
		wantExternal                                bool
		wantVolume                                  string
		// wantDisk is the workers' disk type (none on SAP Cloud Infrastructure).
		wantDisk string
	}{
		{
			name: "azure: numbered zones, the user administers", planID: catalog.AzurePlanID,
			data: process.Record{Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
			wantZonesFrom: []string{"1", "2", "3"}, wantZoneCount: 3, wantAdmins: []string{"jane.doe@example.com"},
			wantDisk: "StandardSSD_LRS",
		},
		{
			name: "gcp: region-letter zones, networking given", planID: catalog.GCPPlanID,
			params: `{"name":"x","networking":{"nodes":"10.180.0.0/16","pods":"10.32.0.0/12"}}`,
			data: process.Record{Provider: "gcp", Region: "europe-west3", ProviderRegion: "europe-west3",
				MachineType: "n2-standard-2", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 2},
			wantZonesFrom: []string{"europe-west3-a", "europe-west3-b", "europe-west3-c"}, wantZoneCount: 2, wantAdmins: []string{"jane.doe@example.com"},
			wantNodes: "10.180.0.0/16", wantPods: "10.32.0.0/12", wantDisk: "pd-balanced",
		},
		{
			name: "aws: letter-suffixed zones, administrators given, an external customer", planID: catalog.AWSPlanID,
			params:  `{"name":"x","administrators":["admin1@example.com","admin2@example.com"]}`,
			context: `{"license_type":"CUSTOMER"}`,
			data: process.Record{Provider: "aws", Region: "eu-central-1", ProviderRegion: "eu-central-1",
				MachineType: "m6i.large", AutoScalerMin: 4, AutoScalerMax: 8, ZonesCount: 3},
			wantZonesFrom: []string{"eu-central-1a", "eu-central-1b", "eu-central-1c"}, wantZoneCount: 3,
			wantAdmins: []string{"admin1@example.com", "admin2@example.com"}, wantExternal: true, wantDisk: "gp3",
		},
		{
			name: "sap-converged-cloud eu-de-1: its zones a, b and d, never c", planID: catalog.SapConvergedCloudPlanID,
			data: process.Record{Provider: "openstack", Region: "eu-de-1", ProviderRegion: "eu-de-1",
				MachineType: "g_c2_m8", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
			wantZonesFrom: []string{"eu-de-1a", "eu-de-1b", "eu-de-1d"}, wantZoneCount: 3, wantAdmins: []string{"jane.doe@example.com"},
		},
		{
			name: "sap-converged-cloud ap-jp-1: its one zone, maxSurge 1", planID: catalog.SapConvergedCloudPlanID,
			data: process.Record{Provider: "openstack", Region: "ap-jp-1", ProviderRegion: "ap-jp-1",
				MachineType: "g_c2_m8", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
			wantZonesFrom: []string{"ap-jp-1a"}, wantZoneCount: 1, wantAdmins: []string{"jane.doe@example.com"},
		},
		{
			name: "aws ca-central-1: its zones a, b and d, never c", planID: catalog.AWSPlanID,
			data: process.Record{Provider: "aws", Region: "ca-central-1", ProviderRegion: "ca-central-1",
				MachineType: "m6i.large", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
			wantZonesFrom: []string{"ca-central-1a", "ca-central-1b", "ca-central-1d"}, wantZoneCount: 3, wantAdmins: []string{"jane.doe@example.com"},
			wantDisk: "gp3",
		},
		{
			name: "trial: the provider's region in the region label, purpose evaluation", planID: catalog.TrialPlanID,
			data: process.Record{Provider: "azure", Region: "europe", ProviderRegion: "westeurope",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 1, AutoScalerMax: 1, ZonesCount: 1},
			wantZonesFrom: []string{"1", "2", "3"}, wantZoneCount: 1, wantAdmins: []string{"jane.doe@example.com"}, wantPurpose: "evaluation",
			wantDisk: "Standard_LRS",
		},
		{
			name: "upper-case runtime ID: CR named in lower case; the plans file's machine image", planID: catalog.AzurePlanID,
			catalog: withImage,
			data: process.Record{RuntimeID: "ABCDEF12-" + uuid.NewString()[9:], Provider: "azure", Region: "eastus",
				ProviderRegion: "eastus", MachineType: "Standard_D2s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 1},
			wantZonesFrom: []string{"1", "2", "3"}, wantZoneCount: 1, wantAdmins: []string{"jane.doe@example.com"}, wantImage: "gardenlinux 1592.9.0",
			wantDisk: "StandardSSD_LRS",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			op := initializedOp(t, tc.planID, tc.params, tc.data)
			if tc.context != "" {
				op.Instance.Context = json.RawMessage(tc.context)
			}
			d := op.Record
			cat := tc.catalog
			if cat == nil {
				cat = processtest.Catalog(t)
			}
			step := &provisioning.CreateRuntime{KCP: c, Catalog: cat, Config: testConfig(ns)}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "create_runtime", processtest.Done, res, err)
			if op.Description == "" {
				t.Error("no description set")
			}

			rt := &infrastructuremanager.Runtime{}
			name := strings.ToLower(d.RuntimeID)
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, rt); err != nil {
				t.Fatalf("reading Runtime CR %s/%s: %v", ns, name, err)
			}
			i := op.Instance
			wantLabels := map[string]string{
				"kyma-project.io/instance-id":        i.InstanceID,
				"kyma-project.io/runtime-id":         d.RuntimeID,
				"kyma-project.io/global-account-id":  i.GlobalAccountID,
				"kyma-project.io/subaccount-id":      i.SubAccountID,
				"kyma-project.io/broker-plan-id":     tc.planID,
				"kyma-project.io/broker-plan-name":   i.PlanName,
				"kyma-project.io/region":             d.ProviderRegion,
				"kyma-project.io/platform-region":    i.PlatformRegion,
				"kyma-project.io/shoot-name":         d.ShootName,
				"kyma-project.io/provider":           upstreamProviderLabel[d.Provider],
				"operator.kyma-project.io/kyma-name": name,
			}
			if g, w := processtest.MustJSON(t, rt.Labels), processtest.MustJSON(t, wantLabels); g != w {
				t.Errorf("labels:\n got %s\nwant %s", g, w)
			}
			purpose, nodes, pods := or(tc.wantPurpose, "development"), or(tc.wantNodes, "10.250.0.0/16"), or(tc.wantPods, "10.96.0.0/13")
			var gotZones []string
			if w := rt.Spec.Shoot.Provider.Workers; len(w) == 1 {
				gotZones = w[0].Zones
			}
			if len(gotZones) != tc.wantZoneCount {
				t.Errorf("zones %v, want %d of %v", gotZones, tc.wantZoneCount, tc.wantZonesFrom)
			}
			for i, z := range gotZones {
				if !slices.Contains(tc.wantZonesFrom, z) || slices.Contains(gotZones[:i], z) {
					t.Errorf("zones %v: %q is not one of the region's %v, or named twice", gotZones, z, tc.wantZonesFrom)
				}
			}
			if !slices.Equal(op.Record.Zones, gotZones) {
				t.Errorf("the record's zones %v, the CR's %v", op.Record.Zones, gotZones)
			}
			zones := int32(len(gotZones))
			worker := infrastructuremanager.Worker{
				Name: "cpu-worker-0", Machine: infrastructuremanager.Machine{Type: d.MachineType},
				Minimum: int32(d.AutoScalerMin), Maximum: int32(d.AutoScalerMax),
				MaxSurge: ptr(intstr.FromInt32(zones)), MaxUnavailable: ptr(intstr.FromInt32(0)),
				Zones: gotZones, Volume: &infrastructuremanager.Volume{VolumeSize: "80Gi"},
			}
			if tc.wantDisk != "" {
				worker.Volume.Type = &tc.wantDisk
			}
			// The image settings, empty as shipped, unless the plans file names one.
			worker.Machine.Image = &infrastructuremanager.ShootMachineImage{Name: "", Version: ptr("")}
			if name, version, ok := strings.Cut(tc.wantImage, " "); ok {
				worker.Machine.Image = &infrastructuremanager.ShootMachineImage{Name: name, Version: &version}
			}
			want := infrastructuremanager.RuntimeSpec{
				Shoot: infrastructuremanager.RuntimeShoot{
					Name: d.ShootName, Purpose: infrastructuremanager.ShootPurpose(purpose), PlatformRegion: i.PlatformRegion,
					Region: d.ProviderRegion, SecretBindingName: d.HyperscalerSecret,
					Provider:   infrastructuremanager.Provider{Type: d.Provider, Workers: []infrastructuremanager.Worker{worker}},
					Networking: infrastructuremanager.Networking{Type: ptr("calico"), Nodes: nodes, Pods: pods, Services: "10.104.0.0/13"},
				},
				Security: infrastructuremanager.Security{Administrators: tc.wantAdmins,
					Networking: infrastructuremanager.NetworkingSecurity{Filter: infrastructuremanager.Filter{
						Ingress: &infrastructuremanager.Ingress{Enabled: false}, Egress: infrastructuremanager.Egress{Enabled: !tc.wantExternal}}}},
			}
			var oidc []infrastructuremanager.OIDCConfig
			if err := json.Unmarshal([]byte(`[`+defaultOIDC+`]`), &oidc); err != nil {
				t.Fatal(err)
			}
			want.Shoot.Kubernetes.KubeAPIServer.AdditionalOIDCConfig = &oidc
			want.Shoot.Kubernetes.Version = ptr("1.16.9")
			if g, w := processtest.MustJSON(t, rt.Spec), processtest.MustJSON(t, want); g != w {
				t.Errorf("spec:\n got %s\nwant %s", g, w)
			}
		})
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// catalogWithMachineImage is the embedded catalog with a machine image
// configured for azure.
func catalogWithMachineImage(t *testing.T) *catalog.Catalog {
	t.Helper()
	b, err := resources.FS.ReadFile(resources.PlansFile)
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "    trialRegions: {europe: westeurope, us: eastus, asia: southeastasia}\n"
	if !strings.Contains(string(b), anchor) {
		t.Fatal("the plans file changed: no azure trialRegions line to anchor the machine image on")
	}
	text := strings.Replace(string(b), anchor, anchor+"    machineImage: {name: gardenlinux, version: \"1592.9.0\"}\n", 1)
	path := filepath.Join(t.TempDir(), "plans.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCreateRuntimeIsIdempotent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		runs int
	}{
		{name: "run twice", runs: 2},
		{name: "run three times", runs: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			c := kcpClient(t)
			op := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure", Region: "eastus",
				ProviderRegion: "eastus", MachineType: "Standard_D2s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3})
			step := &provisioning.CreateRuntime{KCP: c, Catalog: processtest.Catalog(t), Config: testConfig(ns)}
			var first infrastructuremanager.Runtime
			for run := range tc.runs {
				res, err := step.Run(t.Context(), op)
				processtest.MustOutcome(t, "create_runtime", processtest.Done, res, err)
				list := &infrastructuremanager.RuntimeList{}
				if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				if len(list.Items) != 1 {
					t.Fatalf("run %d: %d Runtime CRs, want 1", run, len(list.Items))
				}
				got := list.Items[0]
				if run == 0 {
					first = got
					continue
				}
				if g, w := processtest.MustJSON(t, got.Spec), processtest.MustJSON(t, first.Spec); g != w {
					t.Errorf("run %d changed the spec:\n got %s\nwant %s", run, g, w)
				}
				if got.ResourceVersion != first.ResourceVersion {
					t.Errorf("run %d rewrote the unchanged CR (resourceVersion %s → %s)", run, first.ResourceVersion, got.ResourceVersion)
				}
			}
		})
	}
}
