package infrastructuremanager

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/resources"
	"github.com/kyma-keb/keb/testing/k8stest"
)

func ptr[T any](v T) *T { return &v }

// fullRuntime sets every field the types know, so that every required field
// of the CRD has a parent to be removed from.
func fullRuntime(ns, name string) *Runtime {
	return &Runtime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{controlplane.LabelRuntimeID: "rid-" + name}},
		Spec: RuntimeSpec{
			Shoot: RuntimeShoot{
				Name: "c-" + name, Purpose: "production", PlatformRegion: "cf-eu10", Region: "eu-central-1",
				LicenceType: ptr("CUSTOMER"), SecretBindingName: "sb-aws", EnforceSeedLocation: ptr(true),
				Kubernetes: Kubernetes{Version: ptr("1.33"), KubeAPIServer: APIServer{
					OIDCConfig: &OIDCConfig{ClientID: ptr("cid"), IssuerURL: ptr("https://issuer.example.com"), SigningAlgs: []string{"RS256"},
						UsernameClaim: ptr("sub"), RequiredClaims: map[string]string{"aud": "x"}},
					AdditionalOIDCConfig: &[]OIDCConfig{{ClientID: ptr("cid2"), IssuerURL: ptr("https://other.example.com")}},
				}},
				Provider: Provider{Type: "aws",
					Workers: []Worker{{
						Name: KymaWorkerName, Machine: Machine{Type: "m6i.large", Image: &ShootMachineImage{Name: "gardenlinux", Version: ptr("1592.1.0")},
							Architecture: ptr("amd64")},
						Minimum: 3, Maximum: 20, MaxSurge: ptr(intstr.FromInt32(3)), MaxUnavailable: ptr(intstr.FromInt32(0)),
						Zones:  []string{"eu-central-1a", "eu-central-1b", "eu-central-1c"},
						Volume: &Volume{Type: ptr("gp3"), VolumeSize: "80Gi"}, Labels: map[string]string{"pool": "kyma"},
						Annotations: map[string]string{"note": "x"}, Taints: []Taint{{Key: "dedicated", Value: "kyma", Effect: "NoSchedule"}},
						CRI: &CRI{Name: "containerd"}, Kubernetes: &WorkerKubernetes{Kubelet: &Kubelet{MaxPods: ptr(int32(110))}},
					}},
					AdditionalWorkers:  &[]Worker{{Name: "extra", Machine: Machine{Type: "m6i.xlarge"}, Minimum: 0, Maximum: 3}},
					ControlPlaneConfig: &k8sruntime.RawExtension{Raw: []byte(`{"kind":"ControlPlaneConfig"}`)},
				},
				Networking:   Networking{Type: ptr("calico"), Nodes: "10.250.0.0/16", Pods: "10.96.0.0/13", Services: "10.104.0.0/13"},
				ControlPlane: &ControlPlane{HighAvailability: &HighAvailability{FailureTolerance: FailureTolerance{Type: "zone"}}},
			},
			Security: Security{Administrators: []string{"admin@example.com"},
				Networking: NetworkingSecurity{Filter: Filter{Ingress: &Ingress{Enabled: true}, Egress: Egress{Enabled: true}}}},
			ImageRegistryCache: &ImageRegistryCache{Enabled: true},
		},
	}
}

// strictCreate creates obj as `kubectl apply --dry-run=server --validate=strict` would check it.
func strictCreate(t *testing.T, c client.Client, obj client.Object) error {
	t.Helper()
	return c.Create(t.Context(), obj, client.DryRunAll, client.FieldValidation("Strict"))
}

// The Go types must survive the CRD's schema (pruning, enums) unchanged.
func TestRuntimeRoundTripsThroughTheCRD(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := kcpClient(t)
	k8stest.EnsureNamespace(t, c, "types-roundtrip")
	want := fullRuntime("types-roundtrip", "full")
	if err := c.Create(ctx, want.DeepCopy(), client.FieldValidation("Strict")); err != nil {
		t.Fatalf("creating Runtime: %v", err)
	}
	got := &Runtime{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, got.Spec), mustJSON(t, want.Spec); g != w {
		t.Fatalf("spec after round trip:\n got %s\nwant %s", g, w)
	}
	got.Status = RuntimeStatus{State: StateFailed, ProvisioningCompleted: true, Conditions: []metav1.Condition{{
		Type: ConditionProvisioned, Status: metav1.ConditionFalse, Reason: ReasonGardenerError, Message: "quota exceeded",
		LastTransitionTime: metav1.Now()}}}
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	list := &RuntimeList{}
	if err := c.List(ctx, list, client.InNamespace("types-roundtrip")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || !reflect.DeepEqual(mustJSON(t, list.Items[0].Status), mustJSON(t, got.Status)) {
		t.Fatalf("listed %+v, want one Runtime with status %+v", list.Items, got.Status)
	}
	bad := got.DeepCopy()
	bad.Status.State = "Exploded"
	if err := c.Status().Update(ctx, bad); err == nil {
		t.Fatal("the CRD accepted a state outside its enum")
	}
	bad = got.DeepCopy()
	bad.Status.State = ""
	if err := c.Status().Update(ctx, bad); err == nil {
		t.Fatal("the CRD accepted a status without a state")
	}
}

// TestCRDRefusesWhatKIMRefuses removes every field the CRD requires, one at
// a time, from a Runtime that sets every field, and expects the API server
// to refuse each; it refuses unknown fields (keb's old spec.kyma, a flat
// machineType) and values outside the enums too.
func TestCRDRefusesWhatKIMRefuses(t *testing.T) {
	t.Parallel()
	c := kcpClient(t)
	k8stest.EnsureNamespace(t, c, "types-required")
	full := toUnstructured(t, fullRuntime("types-required", "req"))
	if err := strictCreate(t, c, full.DeepCopy()); err != nil {
		t.Fatalf("the full Runtime is refused: %v", err)
	}
	required := requiredPaths(t, full.Object)
	// The contract's required fields (docs/deploying.md): the walk over the
	// CRD must have found each of them.
	for _, want := range []string{"spec.shoot", "spec.security", "spec.shoot.name", "spec.shoot.purpose", "spec.shoot.platformRegion",
		"spec.shoot.region", "spec.shoot.secretBindingName", "spec.shoot.provider", "spec.shoot.networking",
		"spec.shoot.networking.nodes", "spec.shoot.networking.pods", "spec.shoot.networking.services",
		"spec.shoot.provider.type", "spec.shoot.provider.workers", "spec.shoot.provider.workers[0].name",
		"spec.shoot.provider.workers[0].machine", "spec.shoot.provider.workers[0].machine.type",
		"spec.shoot.provider.workers[0].minimum", "spec.shoot.provider.workers[0].maximum",
		"spec.security.administrators", "spec.security.networking", "spec.security.networking.filter",
		"spec.security.networking.filter.egress", "spec.security.networking.filter.egress.enabled"} {
		if !slices.Contains(required, want) {
			t.Errorf("the CRD does not require %s (it requires %v)", want, required)
		}
	}
	for _, path := range required {
		t.Run("without "+path, func(t *testing.T) {
			t.Parallel()
			obj := full.DeepCopy()
			obj.SetName("req-" + strings.NewReplacer(".", "-", "[", "-", "]", "").Replace(strings.ToLower(path)))
			removePath(t, obj.Object, path)
			err := strictCreate(t, c, obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("a Runtime without %s: %v, want Invalid", path, err)
			}
			last := path[strings.LastIndex(path, ".")+1:]
			if !strings.Contains(err.Error(), last) || !strings.Contains(err.Error(), "Required value") {
				t.Errorf("the refusal does not name %s as required: %v", last, err)
			}
		})
	}
	for name, change := range map[string]func(m map[string]any){
		"keb's own spec.kyma": func(m map[string]any) {
			spec(m)["kyma"] = map[string]any{"version": "2.20.0"}
		},
		"a flat machineType": func(m map[string]any) {
			worker(m)["machineType"] = "m6i.large"
		},
		"a purpose outside the enum": func(m map[string]any) { shoot(m)["purpose"] = "fun" },
		// contracts.md's enum is aws, azure, gcp, openstack: upstream's alicloud and gdch are outside it.
		"provider gdch, outside the enum": func(m map[string]any) {
			shoot(m)["provider"].(map[string]any)["type"] = "gdch"
		},
		"provider alicloud, outside the enum": func(m map[string]any) {
			shoot(m)["provider"].(map[string]any)["type"] = "alicloud"
		},
		"a taint effect outside the enum": func(m map[string]any) {
			worker(m)["taints"] = []any{map[string]any{"key": "k", "effect": "Sometimes"}}
		},
		"a failure tolerance outside the enum": func(m map[string]any) {
			shoot(m)["controlPlane"] = map[string]any{"highAvailability": map[string]any{"failureTolerance": map[string]any{"type": "region"}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			obj := full.DeepCopy()
			obj.SetName("bad-" + strings.ReplaceAll(strings.ReplaceAll(name, "'", ""), " ", "-"))
			obj.SetName(strings.ReplaceAll(strings.ToLower(obj.GetName()), ".", "-"))
			change(obj.Object)
			if err := strictCreate(t, c, obj); err == nil {
				t.Fatalf("the CRD accepted %s", name)
			}
		})
	}
}

// TestCRDPreservesNoUnknownFieldsInSpec: nothing below spec may keep fields
// the schema does not name, except the provider's raw Gardener configs.
func TestCRDPreservesNoUnknownFieldsInSpec(t *testing.T) {
	t.Parallel()
	crds, err := resources.LoadCRDs("infrastructuremanager.kyma-project.io_runtimes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(path string, s apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s apiextensionsv1.JSONSchemaProps) {
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields &&
			path != ".spec.shoot.provider.controlPlaneConfig" && path != ".spec.shoot.provider.infrastructureConfig" {
			t.Errorf("%s preserves unknown fields", path)
		}
		for name, p := range s.Properties {
			walk(path+"."+name, p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(path+"[]", *s.Items.Schema)
		}
	}
	walk(".spec", crds[0].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"])
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func toUnstructured(t *testing.T, rt *Runtime) *unstructured.Unstructured {
	t.Helper()
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(rt)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(GroupVersion.WithKind("Runtime"))
	delete(u.Object, "status")
	return u
}

// requiredPaths walks the CRD's schema alongside obj and returns every
// required field that obj has (lists through their first item, "[0]").
func requiredPaths(t *testing.T, obj map[string]any) []string {
	t.Helper()
	crds, err := resources.LoadCRDs("infrastructuremanager.kyma-project.io_runtimes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, s apiextensionsv1.JSONSchemaProps, v any)
	walk = func(path string, s apiextensionsv1.JSONSchemaProps, v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, r := range s.Required {
				if _, ok := v[r]; ok {
					out = append(out, strings.TrimPrefix(path+"."+r, "."))
				}
			}
			for name, p := range s.Properties {
				if sub, ok := v[name]; ok {
					walk(path+"."+name, p, sub)
				}
			}
		case []any:
			if len(v) > 0 && s.Items != nil && s.Items.Schema != nil {
				walk(path+"[0]", *s.Items.Schema, v[0])
			}
		}
	}
	walk("", *crds[0].Spec.Versions[0].Schema.OpenAPIV3Schema, obj)
	slices.Sort(out)
	return out
}

// removePath deletes the field at a path requiredPaths returned.
func removePath(t *testing.T, obj map[string]any, path string) {
	t.Helper()
	parts := strings.Split(path, ".")
	var cur any = obj
	for _, p := range parts[:len(parts)-1] {
		name, indexed := strings.CutSuffix(p, "[0]")
		cur = cur.(map[string]any)[name]
		if indexed {
			cur = cur.([]any)[0]
		}
	}
	delete(cur.(map[string]any), parts[len(parts)-1])
}

func spec(m map[string]any) map[string]any  { return m["spec"].(map[string]any) }
func shoot(m map[string]any) map[string]any { return spec(m)["shoot"].(map[string]any) }
func worker(m map[string]any) map[string]any {
	return shoot(m)["provider"].(map[string]any)["workers"].([]any)[0].(map[string]any)
}

func TestRuntimeID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{name: "label wins", labels: map[string]string{controlplane.LabelRuntimeID: "rid"}, want: "rid"},
		{name: "no label falls back to the name", want: "cr-name"},
		{name: "empty label falls back to the name", labels: map[string]string{controlplane.LabelRuntimeID: ""}, want: "cr-name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Runtime{ObjectMeta: metav1.ObjectMeta{Name: "cr-name", Labels: tc.labels}}
			if got := r.RuntimeID(); got != tc.want {
				t.Fatalf("RuntimeID() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeepCopySharesNoMemory(t *testing.T) {
	t.Parallel()
	orig := fullRuntime("ns", "orig")
	list := &RuntimeList{Items: []Runtime{*orig}}
	cases := []struct {
		name   string
		mutate func(r *Runtime)
	}{
		{name: "labels", mutate: func(r *Runtime) { r.Labels[controlplane.LabelRuntimeID] = "changed" }},
		{name: "machine type", mutate: func(r *Runtime) { r.Spec.Shoot.Provider.Workers[0].Machine.Type = "changed" }},
		{name: "machine image", mutate: func(r *Runtime) { *r.Spec.Shoot.Provider.Workers[0].Machine.Image.Version = "changed" }},
		{name: "zones", mutate: func(r *Runtime) { r.Spec.Shoot.Provider.Workers[0].Zones[0] = "changed" }},
		{name: "taints", mutate: func(r *Runtime) { r.Spec.Shoot.Provider.Workers[0].Taints[0].Key = "changed" }},
		{name: "administrators", mutate: func(r *Runtime) { r.Spec.Security.Administrators[0] = "changed" }},
		{name: "oidc", mutate: func(r *Runtime) { *r.Spec.Shoot.Kubernetes.KubeAPIServer.OIDCConfig.ClientID = "changed" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cp := orig.DeepCopyObject().(*Runtime)
			tc.mutate(cp)
			if reflect.DeepEqual(cp, orig) {
				t.Fatal("mutation did not take")
			}
			if !reflect.DeepEqual(orig, fullRuntime("ns", "orig")) {
				t.Fatal("mutating the copy changed the original")
			}
			lc := list.DeepCopyObject().(*RuntimeList)
			tc.mutate(&lc.Items[0])
			if !reflect.DeepEqual(list.Items[0], *fullRuntime("ns", "orig")) {
				t.Fatal("mutating the list copy changed the original list")
			}
		})
	}
}
