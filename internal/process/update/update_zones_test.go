package update_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestUpdateRuntimeOfAnEarlierKeb: an aws runtime in ca-central-1 whose
// Runtime CR an earlier keb version wrote, with the region's first three
// zone letters (ca-central-1c, which the region's list in
// resources/zones.yaml lacks) and an operator's maxUnavailable 1, takes an
// update of its autoscaler and a new pool: its pools keep their zones, the
// roll-out keeps the operator's maxUnavailable, and the new pool gets the
// Kyma pool's zones as the CR has them. A legacy oidc object merges over
// the earlier keb's oidcConfig and moves it to additionalOidcConfig[0].
func TestUpdateRuntimeOfAnEarlierKeb(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	ns := processtest.Namespace(t, c, "updz")
	processtest.EnsureNamespace(t, c, controlplane.Namespace)
	cfg := testConfig()
	cfg.Namespace = ns
	// A landscape's Runtime CR settings, which the earlier keb's CR has none of.
	cfg.Runtime = provisioning.RuntimeSettings{KubernetesVersion: "1.33.4", MachineImage: "gardenlinux",
		MachineImageVersion: "1592.9.0", ControlPlaneFailureTolerance: "zone"}
	cat := processtest.Catalog(t)
	steps := map[string]process.Step{}
	for _, s := range update.Pipeline(update.Deps{Config: cfg, Catalog: cat, KCP: c, Accounts: &tenantAccounts{}, Store: &recorder{}}).Steps {
		steps[s.Name()] = s
	}

	inst := processtest.Instance(t, catalog.AWSPlanID)
	inst.RuntimeID, inst.ClusterID, inst.ShootName = uuid.NewString(), uuid.NewString(), "c-earlier"
	inst.PlatformRegion, inst.Provider, inst.ProviderRegion = "cf-eu10", "aws", "ca-central-1"
	inst.State = storage.RuntimeSucceeded
	inst.Parameters = json.RawMessage(`{"name":"x","region":"ca-central-1","additionalWorkerNodePools":[{"name":"old","machineType":"m6i.xlarge"}]}`)
	inst.KymaRecord = storage.KymaRecord{KymaVersion: "2.20.0", KymaComponents: []string{"istio"}}
	earlier := []string{"ca-central-1a", "ca-central-1b", "ca-central-1c"}
	rt := runtimetest.Runtime(ns, inst.RuntimeID)
	rt.Labels[controlplane.LabelPlanName], rt.Labels[controlplane.LabelPlanID], rt.Labels[controlplane.LabelRegion] = "aws", catalog.AWSPlanID, "ca-central-1"
	rt.Spec.Shoot.Name, rt.Spec.Shoot.Region, rt.Spec.Shoot.SecretBindingName = inst.ShootName, "ca-central-1", "sb-aws"
	rt.Spec.Shoot.Provider = im.Provider{Type: "aws",
		Workers: []im.Worker{{Name: im.KymaWorkerName, Machine: im.Machine{Type: "m6i.large"}, Minimum: 3, Maximum: 20,
			MaxSurge: ptr(intstr.FromInt32(3)), MaxUnavailable: ptr(intstr.FromInt32(1)), Zones: earlier,
			Volume: &im.Volume{VolumeSize: "80Gi"}}},
		AdditionalWorkers: &[]im.Worker{{Name: "old", Machine: im.Machine{Type: "m6i.xlarge"}, Minimum: 3, Maximum: 20,
			MaxSurge: ptr(intstr.FromInt32(3)), MaxUnavailable: ptr(intstr.FromInt32(0)), Zones: earlier,
			Volume: &im.Volume{VolumeSize: "80Gi"}}},
	}
	// An earlier keb wrote a legacy oidc parameter into the legacy field.
	rt.Spec.Shoot.Kubernetes.KubeAPIServer.OIDCConfig = &im.OIDCConfig{ClientID: ptr("old"), IssuerURL: ptr("https://old.example.com"), GroupsClaim: ptr("grp")}
	if err := c.Create(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	runtimetest.SetStatus(t, c, rt, im.StateReady, im.ReasonShootCreationCompleted, "Shoot creation completed")
	op := processtest.Operation(storage.OperationTypeUpdate, inst)
	op.Request = &storage.UpdateRequest{PlanID: inst.PlanID, PlanName: inst.PlanName, Parameters: json.RawMessage(
		`{"name":"x","region":"ca-central-1","autoScalerMax":30,"oidc":{"clientID":"new","issuerURL":"https://new.example.com"},"additionalWorkerNodePools":[` +
			`{"name":"old","machineType":"m6i.xlarge"},{"name":"new","machineType":"m6i.2xlarge"},{"name":"one","machineType":"m6i.large","haZones":false,"autoScalerMin":1}]}`)}
	provisionedKyma(t, c, op)

	runStep(t, steps["update_initialization"], op, processtest.Done)
	runStep(t, steps["update_runtime"], op, processtest.Done)
	got := getRuntime(t, c, ns, op)
	w := got.Spec.Shoot.Provider.Workers[0]
	if !slices.Equal(w.Zones, earlier) || w.Maximum != 30 || w.MaxSurge.IntValue() != 3 || w.MaxUnavailable == nil || w.MaxUnavailable.IntValue() != 1 {
		t.Errorf("Kyma pool after the update: zones %v, maximum %d, maxSurge %v, maxUnavailable %v; want zones %v, 30, 3, 1",
			w.Zones, w.Maximum, w.MaxSurge, w.MaxUnavailable, earlier)
	}
	pools := map[string]im.Worker{}
	for _, p := range *got.Spec.Shoot.Provider.AdditionalWorkers {
		pools[p.Name] = p
	}
	for name, want := range map[string][]string{"old": earlier, "new": earlier, "one": earlier[:1]} {
		if !slices.Equal(pools[name].Zones, want) {
			t.Errorf("pool %s: zones %v, want %v", name, pools[name].Zones, want)
		}
	}
	api := got.Spec.Shoot.Kubernetes.KubeAPIServer
	if oidc := processtest.MustJSON(t, api.AdditionalOIDCConfig); api.OIDCConfig != nil ||
		oidc != `[{"clientID":"new","issuerURL":"https://new.example.com","groupsClaim":"grp"}]` {
		t.Errorf("OIDC after a legacy object: additionalOidcConfig %s, oidcConfig %+v; want the earlier oidcConfig merged and moved", oidc, api.OIDCConfig)
	}
	if !slices.Equal(op.Record.Zones, earlier) {
		t.Errorf("the update's record names zones %v, want the CR's %v", op.Record.Zones, earlier)
	}
	// The machine type stays the earlier keb's (its m6i.large for the AWS
	// default, which is mi.large → m7i.large now): an update that does not
	// change it does not roll the nodes to another family.
	if w.Machine.Type != "m6i.large" {
		t.Errorf("Kyma pool's machine type %s after an update that did not change it, want the CR's m6i.large", w.Machine.Type)
	}
	// As upstream's update: the settings reach only the new pools; the
	// cluster's version, control plane and the existing pools' disks and
	// images stay as the earlier keb wrote them (none: Gardener's defaults).
	if v, cp := got.Spec.Shoot.Kubernetes.Version, got.Spec.Shoot.ControlPlane; v != nil || cp != nil {
		t.Errorf("the update wrote Kubernetes version %v, control plane %+v; want neither", v, cp)
	}
	for _, p := range append([]im.Worker{w}, pools["old"]) {
		if p.Machine.Image != nil || p.Volume == nil || p.Volume.Type != nil {
			t.Errorf("pool %s of the earlier keb: image %+v, volume %+v; want no image and no disk type", p.Name, p.Machine.Image, p.Volume)
		}
	}
	for _, name := range []string{"new", "one"} {
		p := pools[name]
		if img := p.Machine.Image; img == nil || img.Name != "gardenlinux" || img.Version == nil || *img.Version != "1592.9.0" ||
			p.Volume == nil || p.Volume.Type == nil || *p.Volume.Type != "gp3" {
			t.Errorf("new pool %s: image %+v, volume %+v; want gardenlinux 1592.9.0 and gp3", name, p.Machine.Image, p.Volume)
		}
	}
}
