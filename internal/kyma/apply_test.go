package kyma

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kyma-keb/keb/internal/controlplane"
)

// testInput is a runtime of plan azure with a fresh runtime ID.
func testInput(modules *ModulesParam) KymaInput {
	id := uuid.NewString()
	return KymaInput{InstanceID: "inst-" + id, RuntimeID: id, GlobalAccountID: "ga", SubAccountID: "sa",
		PlanID: "4deee563-e5ec-4731-b9b1-53b42d855f0c", PlanName: "azure", Region: "westeurope",
		PlatformRegion: "cf-eu20", ShootName: "c-" + id[:7], Modules: modules}
}

var testSettings = Settings{ShootDomain: "kyma.example.com", Beta: Audience{Plans: []string{"azure"}}}

// TestApplyCreatesThenWritesNothing: Apply creates the CR as NewKyma built it (with the CRD's
// defaults filled in), and applying it again changes nothing (same resourceVersion: Lifecycle
// Manager sees no event).
func TestApplyCreatesThenWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := newClient(t)
	ensureNamespace(t, c, controlplane.Namespace)
	want := NewKyma(testInput(&ModulesParam{Channel: controlplane.ChannelFast, List: []Module{
		{Name: "keda", Channel: controlplane.ChannelRegular, CustomResourcePolicy: controlplane.CustomResourcePolicyIgnore, Managed: ptr(false)},
		{Name: "serverless"},
	}}), testSettings)
	if err := Apply(ctx, c, want); err != nil {
		t.Fatal(err)
	}
	var got Kyma
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), &got); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Labels, want.Labels) || !maps.Equal(got.Annotations, want.Annotations) {
		t.Errorf("labels %v annotations %v, want %v %v", got.Labels, got.Annotations, want.Labels, want.Annotations)
	}
	wantModules := `[{"name":"keda","channel":"regular","customResourcePolicy":"Ignore","managed":false},` +
		`{"name":"serverless","customResourcePolicy":"CreateAndDelete","managed":true}]`
	if g := mustJSON(t, got.Spec.Modules); got.Spec.Channel != "fast" || g != wantModules {
		t.Errorf("spec channel %q modules %s, want fast %s (the CRD's defaults filled in)", got.Spec.Channel, g, wantModules)
	}
	if err := Apply(ctx, c, want); err != nil {
		t.Fatal(err)
	}
	var again Kyma
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), &again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("applying the same CR again wrote it (resourceVersion %s → %s)", got.ResourceVersion, again.ResourceVersion)
	}
}

// TestKebsWritesKeepWhatKebDoesNotSet: fields keb never sets (an operator's
// spec.skipMaintenanceWindows, a module's controller, Lifecycle Manager's finalizer, a label
// of someone else) survive keb's every write: the apply of a re-run provisioning, the label
// patch of a plan change and the channel patch of a Kyma upgrade.
func TestKebsWritesKeepWhatKebDoesNotSet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := newClient(t)
	ensureNamespace(t, c, controlplane.Namespace)
	in := testInput(nil)
	k := NewKyma(in, testSettings)
	if err := Apply(ctx, c, k); err != nil {
		t.Fatal(err)
	}
	// An operator (another field manager) sets what keb does not model.
	foreign := `{"metadata":{"labels":{"team":"a"},"finalizers":["operator.kyma-project.io/Kyma"]},` +
		`"spec":{"skipMaintenanceWindows":true,"modules":[{"name":"istio","controller":"istio-ctrl"}]}}`
	// A strategic merge of a CR is not possible; a JSON merge patch would replace spec.modules,
	// so the operator applies (server-side) as its own manager.
	op := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(foreign), &op.Object); err != nil {
		t.Fatal(err)
	}
	op.SetGroupVersionKind(GroupVersion.WithKind(Kind))
	op.SetNamespace(k.Namespace)
	op.SetName(k.Name)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(op), client.FieldOwner("operator")); err != nil {
		t.Fatalf("operator's apply: %v", err)
	}
	check := func(after string) {
		t.Helper()
		var got Kyma
		if err := c.Get(ctx, client.ObjectKeyFromObject(k), &got); err != nil {
			t.Fatal(err)
		}
		if !got.Spec.SkipMaintenanceWindows {
			t.Errorf("after %s: spec.skipMaintenanceWindows lost", after)
		}
		i := -1
		for n, m := range got.Spec.Modules {
			if m.Name == "istio" {
				i = n
			}
		}
		if i < 0 || got.Spec.Modules[i].ControllerName != "istio-ctrl" {
			t.Errorf("after %s: modules[istio].controller lost: %s", after, mustJSON(t, got.Spec.Modules))
		}
		if got.Labels["team"] != "a" || len(got.Finalizers) != 1 {
			t.Errorf("after %s: label team %q, finalizers %v", after, got.Labels["team"], got.Finalizers)
		}
		if len(got.Spec.Modules) != len(DefaultModules()) {
			t.Errorf("after %s: %d modules, want the %d defaults", after, len(got.Spec.Modules), len(DefaultModules()))
		}
	}
	check("the operator's apply")

	if err := Apply(ctx, c, k); err != nil {
		t.Fatal(err)
	}
	check("keb's apply again")

	after := in
	after.PlanID, after.PlanName = "361c511f-f939-4621-b228-d0fb79a1fe15", "aws"
	wrote, err := PatchLabels(ctx, c, k.Namespace, k.Name, Labels(in, testSettings), Labels(after, testSettings))
	if err != nil || !wrote {
		t.Fatalf("plan labels: wrote %v, %v", wrote, err)
	}
	check("a plan change")

	if err := SetChannel(ctx, c, k.Namespace, k.Name, controlplane.ChannelFast); err != nil {
		t.Fatal(err)
	}
	check("a Kyma upgrade")

	var got Kyma
	if err := c.Get(ctx, client.ObjectKeyFromObject(k), &got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[controlplane.LabelPlanName] != "aws" || got.Labels[controlplane.LabelPlanID] != after.PlanID {
		t.Errorf("plan labels %q %q, want aws", got.Labels[controlplane.LabelPlanName], got.Labels[controlplane.LabelPlanID])
	}
	if _, beta := got.Labels[controlplane.LabelBeta]; beta {
		t.Error("the beta label of plan azure stayed after the move to aws, which the settings do not open beta modules to")
	}
	if got.Spec.Channel != controlplane.ChannelFast {
		t.Errorf("channel %q, want fast", got.Spec.Channel)
	}
}

// TestPatchLabelsSendsOnlyChanges: labels both sides agree on are not sent, so an unchanged
// plan writes nothing at all.
func TestPatchLabelsSendsOnlyChanges(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := newClient(t)
	ensureNamespace(t, c, controlplane.Namespace)
	in := testInput(nil)
	k := NewKyma(in, testSettings)
	if err := Apply(ctx, c, k); err != nil {
		t.Fatal(err)
	}
	// Someone else changes a label keb set; a patch that does not change it leaves it.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"kyma-project.io/region":"moved"}}}`))
	if err := c.Patch(ctx, &Kyma{ObjectMeta: k.ObjectMeta}, patch, client.FieldOwner("operator")); err != nil {
		t.Fatal(err)
	}
	wrote, err := PatchLabels(ctx, c, k.Namespace, k.Name, Labels(in, testSettings), Labels(in, testSettings))
	if err != nil || wrote {
		t.Fatalf("unchanged labels: wrote %v, %v", wrote, err)
	}
	set, removed := LabelChanges(map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1", "b": "3", "c": "4"})
	if !maps.Equal(set, map[string]string{"b": "3", "c": "4"}) || len(removed) != 0 {
		t.Errorf("changes %v removed %v", set, removed)
	}
	if _, removed := LabelChanges(map[string]string{"a": "1"}, nil); len(removed) != 1 || removed[0] != "a" {
		t.Errorf("removed %v, want [a]", removed)
	}
}

// TestKymaCRsKebWritesPassStrictValidation holds every Kyma CR keb writes (default, none, custom
// modules; internal and beta labels) to `kubectl apply --dry-run=server --validate=strict`
// against the CRD `make generate` writes, and that CRD to Lifecycle Manager's rules: each
// required field removed, an unknown policy, a channel outside the pattern and a field the API
// does not have are each refused.
func TestKymaCRsKebWritesPassStrictValidation(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	ensureNamespace(t, c, controlplane.Namespace)
	all := Settings{ShootDomain: "kyma.example.com", Internal: Audience{Plans: []string{"azure"}}, Beta: Audience{Plans: []string{"azure"}}}
	inputs := map[string]KymaInput{
		"default modules": testInput(nil),
		"no modules":      testInput(&ModulesParam{Default: ptr(false)}),
		"custom modules": testInput(&ModulesParam{Channel: controlplane.ChannelFast, List: []Module{
			{Name: "keda", Channel: controlplane.ChannelRegular, CustomResourcePolicy: controlplane.CustomResourcePolicyIgnore, Managed: ptr(false)},
			{Name: "btp-operator", CustomResourcePolicy: controlplane.CustomResourcePolicyCreateAndDelete, Managed: ptr(true)},
		}}),
	}
	for name, in := range inputs {
		u, err := ApplyObject(NewKyma(in, all))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := dryRun(t, u.Object); err != nil {
			t.Errorf("%s: keb's Kyma CR refused: %v", name, err)
		} else if !strings.Contains(out, "created (server dry run)") {
			t.Errorf("%s: kubectl said %q", name, out)
		}
	}

	refused := []struct {
		name   string
		change func(obj map[string]any)
		want   string
	}{
		{"spec.channel removed", func(o map[string]any) { delete(spec(o), "channel") }, "spec.channel: Required value"},
		{"spec.modules[0].name removed", func(o map[string]any) { delete(module0(o), "name") }, "name: Required value"},
		{"unknown customResourcePolicy", func(o map[string]any) { module0(o)["customResourcePolicy"] = "Keep" }, "Unsupported value"},
		{"channel not lower-case letters", func(o map[string]any) { spec(o)["channel"] = "Fast-1" }, "spec.channel"},
		{"module channel too short", func(o map[string]any) { module0(o)["channel"] = "ab" }, "channel"},
		{"a field Lifecycle Manager's API does not have", func(o map[string]any) { spec(o)["kymaVersion"] = "2.20.0" }, `unknown field "spec.kymaVersion"`},
		{"a module field Lifecycle Manager's API does not have", func(o map[string]any) { module0(o)["version"] = "1.0" }, `unknown field "spec.modules[0].version"`},
	}
	for _, tc := range refused {
		u, err := ApplyObject(NewKyma(testInput(nil), all))
		if err != nil {
			t.Fatal(err)
		}
		tc.change(u.Object)
		out, err := dryRun(t, u.Object)
		if err == nil {
			t.Errorf("%s: accepted (%s)", tc.name, out)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: refused, but kubectl said %q, want it to name %q", tc.name, out, tc.want)
		}
	}
}

func spec(o map[string]any) map[string]any { return o["spec"].(map[string]any) }

func module0(o map[string]any) map[string]any {
	return spec(o)["modules"].([]any)[0].(map[string]any)
}

// dryRun offers obj to `kubectl apply --dry-run=server --validate=strict`.
func dryRun(t *testing.T, obj map[string]any) (string, error) {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return env.Kubectl(t, b, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
