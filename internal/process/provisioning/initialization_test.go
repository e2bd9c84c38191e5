package provisioning_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/resources"
)

// pinKymaVersion adds globalAccountID: version to kcp-system/kyma-versions. The product reads
// the pins from kcp-system whatever the step's Config.Namespace, so the ConfigMap is shared by
// all tests: each pins its own, unique global account, with a merge patch that never conflicts.
func pinKymaVersion(t *testing.T, globalAccountID, version string) {
	t.Helper()
	c := kcpClient(t)
	ctx := t.Context()
	ensureNamespace(t, controlplane.Namespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: kyma.VersionsConfigMap},
		Data:       map[string]string{globalAccountID: version},
	}
	err := c.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{globalAccountID: version}})
		err = c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		t.Fatalf("pinning Kyma version %s for %s: %v", version, globalAccountID, err)
	}
}

func TestInitializationAppliesPlanDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		planID         string
		platformRegion string
		params         string
		// want is the data the step must record (runtime and cluster IDs, shoot name and
		// Kyma version are checked elsewhere).
		want process.Record
	}{
		{
			name: "azure: eastus, Standard_D2s_v5, autoscaler 3..20, 3 zones", planID: catalog.AzurePlanID,
			want: process.Record{Provider: "azure", Region: "eastus", ProviderRegion: "eastus",
				MachineType: "Standard_D2s_v5", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
		},
		{
			name: "aws: eu-central-1, mi.large", planID: catalog.AWSPlanID,
			want: process.Record{Provider: "aws", Region: "eu-central-1", ProviderRegion: "eu-central-1",
				MachineType: "mi.large", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
		},
		{
			name: "gcp: europe-west3, n2-standard-2", planID: catalog.GCPPlanID,
			want: process.Record{Provider: "gcp", Region: "europe-west3", ProviderRegion: "europe-west3",
				MachineType: "n2-standard-2", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
		},
		{
			name: "azure_lite: autoscaler 2..10, one zone, upstream's lite machine (Standard_D2s_v5)", planID: catalog.AzureLitePlanID,
			want: process.Record{Provider: "azure", Region: "eastus", ProviderRegion: "eastus",
				MachineType: "Standard_D2s_v5", AutoScalerMin: 2, AutoScalerMax: 10, ZonesCount: 1},
		},
		{
			name: "trial from cf-us10: trial region us on azure eastus, one node", planID: catalog.TrialPlanID,
			platformRegion: "cf-us10",
			want: process.Record{Provider: "azure", Region: "us", ProviderRegion: "eastus",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 1, AutoScalerMax: 1, ZonesCount: 1},
		},
		{
			name: "trial asks for asia", planID: catalog.TrialPlanID, params: `{"name":"t","region":"asia"}`, platformRegion: "cf-eu20",
			want: process.Record{Provider: "azure", Region: "asia", ProviderRegion: "southeastasia",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 1, AutoScalerMax: 1, ZonesCount: 1},
		},
		{
			name: "free from cf-eu10 runs on aws", planID: catalog.FreePlanID, platformRegion: "cf-eu10",
			want: process.Record{Provider: "aws", Region: "eu-central-1", ProviderRegion: "eu-central-1",
				MachineType: "mi.xlarge", AutoScalerMin: 1, AutoScalerMax: 1, ZonesCount: 1},
		},
		{
			name: "free from cf-eu20 runs on azure", planID: catalog.FreePlanID, platformRegion: "cf-eu20",
			want: process.Record{Provider: "azure", Region: "eastus", ProviderRegion: "eastus",
				MachineType: "Standard_D4s_v5", AutoScalerMin: 1, AutoScalerMax: 1, ZonesCount: 1},
		},
		{
			name: "sap-converged-cloud: openstack defaults (cf-eu10 offers eu-de-2)", planID: catalog.SapConvergedCloudPlanID,
			want: process.Record{Provider: "openstack", Region: "eu-de-2", ProviderRegion: "eu-de-2",
				MachineType: "g_c2_m8", AutoScalerMin: 3, AutoScalerMax: 20, ZonesCount: 3},
		},
		{
			name:   "azure: the user's choices win over the defaults",
			planID: catalog.AzurePlanID,
			params: `{"name":"x","region":"westeurope","machineType":"Standard_D8s_v5","autoScalerMin":4,"autoScalerMax":6,"zonesCount":2}`,
			want: process.Record{Provider: "azure", Region: "westeurope", ProviderRegion: "westeurope",
				MachineType: "Standard_D8s_v5", AutoScalerMin: 4, AutoScalerMax: 6, ZonesCount: 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := newOp(t, tc.planID, tc.params)
			if tc.platformRegion != "" {
				op.Instance.PlatformRegion = tc.platformRegion
			}
			step := &provisioning.Initialization{Catalog: processtest.Catalog(t), Store: newIdentityStore(),
				KCP: kcpClient(t), Config: testConfig(newNamespace(t))}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "initialization", processtest.Done, res, err)
			got := op.Record
			got.RuntimeID, got.ClusterID, got.ShootName, got.KymaVersion = "", "", "", ""
			if g, w := processtest.MustJSON(t, got), processtest.MustJSON(t, tc.want); g != w {
				t.Errorf("data:\n got %s\nwant %s", g, w)
			}
			if op.Description == "" {
				t.Error("no description set")
			}
		})
	}
}

// shootName is the shoot naming rule users see in dashboards: "c-" and 7 DNS-safe characters.
var shootName = regexp.MustCompile(`^c-[a-z0-9]{7}$`)

func TestInitializationRuntimeIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// stored is a runtime and cluster ID the store already holds for the instance (a crash
		// after SetRuntimeIdentity); empty: none yet.
		stored [2]string
		runs   int
	}{
		{name: "fresh instance gets new IDs", runs: 1},
		{name: "re-run keeps the first IDs and shoot name", runs: 3},
		{name: "IDs already stored are taken from the store", runs: 1,
			stored: [2]string{"5c0a6b2e-1f3d-4c1e-9a7b-0123456789ab", "c1d2e3f4-0000-4000-8000-000000000001"}},
		{name: "stored IDs survive re-runs", runs: 2,
			stored: [2]string{"a1b2c3d4-e5f6-4711-8000-0123456789ab", "c1d2e3f4-0000-4000-8000-000000000002"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newIdentityStore()
			base := newOp(t, catalog.AzurePlanID, "")
			if tc.stored[0] != "" {
				store.ids[base.InstanceID] = storage.RuntimeIdentity{RuntimeID: tc.stored[0], ClusterID: tc.stored[1],
					ShootName: provisioning.ShootName(tc.stored[0])}
			}
			step := &provisioning.Initialization{Catalog: processtest.Catalog(t), Store: store, KCP: kcpClient(t),
				Config: testConfig(newNamespace(t))}
			var first process.Record
			for i := range tc.runs {
				// Every run starts from the stored operation, as after a crash: no data yet.
				op := newOp(t, catalog.AzurePlanID, "")
				op.InstanceID, op.Instance.InstanceID = base.InstanceID, base.InstanceID
				res, err := step.Run(t.Context(), op)
				processtest.MustOutcome(t, "initialization", processtest.Done, res, err)
				d := op.Record
				if _, err := uuid.Parse(d.RuntimeID); err != nil {
					t.Errorf("run %d: runtime ID %q is not a UUID", i, d.RuntimeID)
				}
				if d.ClusterID == "" || d.ClusterID == d.RuntimeID {
					t.Errorf("run %d: cluster ID %q must be set and differ from the runtime ID", i, d.ClusterID)
				}
				if !shootName.MatchString(d.ShootName) {
					t.Errorf("run %d: shoot name %q does not match %s", i, d.ShootName, shootName)
				}
				if !strings.HasPrefix(strings.ReplaceAll(d.RuntimeID, "-", ""), strings.TrimPrefix(d.ShootName, "c-")) {
					t.Errorf("run %d: shoot name %q is not derived from runtime ID %q", i, d.ShootName, d.RuntimeID)
				}
				if i == 0 {
					first = d
					continue
				}
				if d.RuntimeID != first.RuntimeID || d.ClusterID != first.ClusterID || d.ShootName != first.ShootName {
					t.Errorf("run %d: got runtime %s cluster %s shoot %s, first run had %s %s %s", i,
						d.RuntimeID, d.ClusterID, d.ShootName, first.RuntimeID, first.ClusterID, first.ShootName)
				}
			}
			if tc.stored[0] != "" && (first.RuntimeID != tc.stored[0] || first.ClusterID != tc.stored[1]) {
				t.Errorf("got runtime %s cluster %s, want the stored %s %s", first.RuntimeID, first.ClusterID, tc.stored[0], tc.stored[1])
			}
			if store.calls != tc.runs {
				t.Errorf("store called %d times, want %d", store.calls, tc.runs)
			}
		})
	}
}

func TestInitializationKymaVersion(t *testing.T) {
	t.Parallel()
	const defaultVersion = "2.20.0"
	tests := []struct {
		name      string
		pin       string // the global account's entry in kcp-system/kyma-versions; "" none
		requested string // the kymaVersion parameter; "" none
		onDemand  bool
		want      string
	}{
		{name: "no pin, nothing requested: default", want: defaultVersion},
		{name: "pinned global account gets its version", pin: "2.5.3", want: "2.5.3"},
		{name: "requested without on-demand versions: ignored", requested: "2.7.1", want: defaultVersion},
		{name: "requested without on-demand versions: pin still applies", pin: "2.5.3", requested: "2.7.1", want: "2.5.3"},
		{name: "requested with on-demand versions: honoured", requested: "2.7.1", onDemand: true, want: "2.7.1"},
		{name: "on-demand request wins over the pin", pin: "2.5.3", requested: "2.7.1", onDemand: true, want: "2.7.1"},
		{name: "on-demand on, nothing requested: pin", pin: "2.5.3", onDemand: true, want: "2.5.3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := ""
			if tc.requested != "" {
				params = `{"name":"x","kymaVersion":"` + tc.requested + `"}`
			}
			op := newOp(t, catalog.AzurePlanID, params)
			if tc.pin != "" {
				pinKymaVersion(t, op.Instance.GlobalAccountID, tc.pin)
			} else {
				// Another account's pin must not leak into this one.
				pinKymaVersion(t, "other-"+op.Instance.GlobalAccountID, "9.9.9")
			}
			cfg := testConfig(newNamespace(t))
			cfg.DefaultKymaVersion, cfg.OnDemandVersion = defaultVersion, tc.onDemand
			step := &provisioning.Initialization{Catalog: processtest.Catalog(t), Store: newIdentityStore(), KCP: kcpClient(t), Config: cfg}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "initialization", processtest.Done, res, err)
			if op.Record.KymaVersion != tc.want {
				t.Errorf("Kyma version %q, want %q", op.Record.KymaVersion, tc.want)
			}
		})
	}
}

func TestInitializationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		planID   string
		params   string
		storeErr error
		want     processtest.Outcome
		wantMsg  string // in the failure or error
		// platformRegion replaces cf-eu10.
		platformRegion string
	}{
		{name: "unknown plan fails for good", planID: "00000000-0000-0000-0000-000000000000", want: processtest.Failure, wantMsg: "unknown plan"},
		{name: "unreadable stored parameters fail for good", planID: catalog.AzurePlanID, params: `{"name":`, want: processtest.Failure, wantMsg: "parameters"},
		{name: "trial region unknown to the provider fails for good", planID: catalog.TrialPlanID, params: `{"name":"t","region":"mars"}`, want: processtest.Failure, wantMsg: "mars",
			platformRegion: "cf-eu20"},
		{name: "store unavailable is temporary", planID: catalog.AzurePlanID, storeErr: errors.New("connection refused"), want: processtest.Temporary, wantMsg: "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newIdentityStore()
			store.err = tc.storeErr
			op := newOp(t, tc.planID, tc.params)
			if tc.platformRegion != "" {
				op.Instance.PlatformRegion = tc.platformRegion
			}
			step := &provisioning.Initialization{Catalog: processtest.Catalog(t), Store: store, KCP: kcpClient(t), Config: testConfig(newNamespace(t))}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, step.Name(), tc.want, res, err)
			msg := ""
			if err != nil {
				msg = err.Error()
			} else if res.Failure != nil {
				msg = res.Failure.Error()
			}
			if !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("message %q does not mention %q", msg, tc.wantMsg)
			}
			if op.Instance.RuntimeID != "" {
				t.Errorf("runtime ID %q recorded although the step did not finish", op.Instance.RuntimeID)
			}
		})
	}
}

// TestInitializationKeepsWhatTheRequestResolved: plans.yaml changes between
// the broker accepting a provisioning and a worker starting it (here: Azure's
// default region moves from eastus to westeurope). The runtime is built in
// the region the request resolved, which is the instance's, not the new one.
func TestInitializationKeepsWhatTheRequestResolved(t *testing.T) {
	t.Parallel()
	accepted := processtest.Catalog(t)
	plans, err := resources.FS.ReadFile(resources.PlansFile)
	if err != nil {
		t.Fatal(err)
	}
	changedPlans := strings.Replace(string(plans), "defaultRegion: eastus", "defaultRegion: westeurope", 1)
	if changedPlans == string(plans) {
		t.Fatal("plans.yaml has no Azure default region eastus to change")
	}
	path := filepath.Join(t.TempDir(), "plans.yaml")
	if err := os.WriteFile(path, []byte(changedPlans), 0o600); err != nil {
		t.Fatal(err)
	}
	changed, err := catalog.Load(path)
	if err != nil {
		t.Fatalf("loading the changed plans: %v", err)
	}
	for _, tc := range []struct {
		name               string
		resolvedAtRequest  bool
		wantRegion         string
		wantProviderRegion string
	}{
		{name: "accepted provisioning: the request's region", resolvedAtRequest: true, wantRegion: "eastus", wantProviderRegion: "eastus"},
		// A resumption resolves nothing at its request: it gets today's plans.
		{name: "nothing resolved at the request: today's plans", wantRegion: "westeurope", wantProviderRegion: "westeurope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := newOp(t, catalog.AzurePlanID, `{"name":"x"}`)
			if tc.resolvedAtRequest {
				// What the broker stored when it accepted the request.
				res, err := accepted.Resolve(op.Instance.PlanID, op.Instance.PlatformRegion, catalog.ProvisioningParameters{Name: "x"})
				if err != nil {
					t.Fatal(err)
				}
				op.Instance.Provider, op.Instance.ProviderRegion = res.Provider, res.ProviderRegion
				op.Record.SetResolved(res)
			}
			step := &provisioning.Initialization{Catalog: changed, Store: newIdentityStore(),
				KCP: kcpClient(t), Config: testConfig(newNamespace(t))}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "initialization", processtest.Done, res, err)
			if op.Record.Provider != "azure" || op.Record.Region != tc.wantRegion || op.Record.ProviderRegion != tc.wantProviderRegion {
				t.Errorf("runtime in %s %s/%s, want azure %s/%s", op.Record.Provider, op.Record.Region,
					op.Record.ProviderRegion, tc.wantRegion, tc.wantProviderRegion)
			}
			if tc.resolvedAtRequest && op.Record.ProviderRegion != op.Instance.ProviderRegion {
				t.Errorf("runtime in %s, instance in %s", op.Record.ProviderRegion, op.Instance.ProviderRegion)
			}
		})
	}
}

// A database restored from a backup taken before the runtime ID was saved
// does not know the Runtime CR the provisioning already created: the re-run
// adopts that CR's runtime ID instead of creating a second runtime.
func TestInitializationAdoptsTheInstancesRuntimeCR(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cfg := testConfig(ns)
	earlier := newOp(t, catalog.AzurePlanID, "")
	earlier.Instance.RuntimeID = uuid.NewString()
	earlier.Instance.ShootName = provisioning.ShootName(earlier.Instance.RuntimeID)
	params, err := provisioning.Parameters(earlier)
	if err != nil {
		t.Fatal(err)
	}
	earlier.Record.SetResolved(resolvedFor(t, earlier, params))
	if err := kcpClient(t).Create(t.Context(), provisioning.DesiredRuntime(earlier, params, processtest.Catalog(t), ns, testConfig(ns).Runtime)); err != nil {
		t.Fatal(err)
	}

	op := newOp(t, catalog.AzurePlanID, "")
	op.InstanceID, op.Instance.InstanceID = earlier.InstanceID, earlier.InstanceID
	step := &provisioning.Initialization{Catalog: processtest.Catalog(t), Store: newIdentityStore(), KCP: kcpClient(t), Config: cfg}
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "initialization", processtest.Done, res, err)
	if op.Instance.RuntimeID != earlier.Instance.RuntimeID || op.Instance.ShootName != earlier.Instance.ShootName {
		t.Errorf("runtime %s shoot %s, want the existing Runtime CR's %s %s", op.Instance.RuntimeID, op.Instance.ShootName,
			earlier.Instance.RuntimeID, earlier.Instance.ShootName)
	}

	// Another instance gets a runtime of its own.
	other := newOp(t, catalog.AzurePlanID, "")
	res, err = step.Run(t.Context(), other)
	processtest.MustOutcome(t, "initialization", processtest.Done, res, err)
	if other.Instance.RuntimeID == earlier.Instance.RuntimeID {
		t.Error("another instance adopted the Runtime CR")
	}
}

// resolvedFor resolves op's plan defaults as the broker does at accept.
func resolvedFor(t *testing.T, op *process.Operation, params catalog.ProvisioningParameters) catalog.Resolved {
	t.Helper()
	res, err := processtest.Catalog(t).Resolve(op.Instance.PlanID, op.Instance.PlatformRegion, params)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// seenRuntimes is a control-plane watch that has seen runtimes.
type seenRuntimes []im.Runtime

func (s seenRuntimes) SeenList(_ context.Context, list client.ObjectList, opts ...client.ListOption) bool {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	out := list.(*im.RuntimeList)
	for _, rt := range s {
		if lo.LabelSelector.Matches(labels.Set(rt.Labels)) {
			out.Items = append(out.Items, rt)
		}
	}
	return true
}

// With the watch running, the instance's Runtime CR is found in what it has
// seen, without a request.
func TestInitializationAdoptsTheRuntimeCRTheWatchHasSeen(t *testing.T) {
	t.Parallel()
	op := newOp(t, catalog.AzurePlanID, "")
	runtimeID := uuid.NewString()
	seen := seenRuntimes{{ObjectMeta: metav1.ObjectMeta{Name: runtimeID, Labels: map[string]string{
		controlplane.LabelInstanceID: op.InstanceID, controlplane.LabelRuntimeID: runtimeID}}}}
	step := &provisioning.Initialization{Catalog: processtest.Catalog(t), Store: newIdentityStore(), KCP: kcpClient(t),
		Seen: seen, Config: testConfig(newNamespace(t))}
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "initialization", processtest.Done, res, err)
	if op.Instance.RuntimeID != runtimeID {
		t.Errorf("runtime %s, want the seen Runtime CR's %s", op.Instance.RuntimeID, runtimeID)
	}
}
