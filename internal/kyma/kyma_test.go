package kyma

import (
	"maps"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/testing/k8stest"
)

var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

func ptr[T any](v T) *T { return &v }

func TestNewKymaLabels(t *testing.T) {
	t.Parallel()
	in := KymaInput{
		InstanceID: "inst-1", RuntimeID: "RT-ABC", GlobalAccountID: "ga-1", SubAccountID: "sa-1",
		PlanID: "4deee563-e5ec-4731-b9b1-53b42d855f0c", PlanName: "azure", Region: "eastus", PlatformRegion: "cf-eu20",
		ShootName: "c-1a2b3c", Provider: "Azure",
	}
	k := NewKyma(in, Settings{ShootDomain: "kyma.example.com"})
	want := map[string]string{
		"kyma-project.io/instance-id":         "inst-1",
		"kyma-project.io/runtime-id":          "RT-ABC",
		"kyma-project.io/global-account-id":   "ga-1",
		"kyma-project.io/subaccount-id":       "sa-1",
		"kyma-project.io/broker-plan-id":      "4deee563-e5ec-4731-b9b1-53b42d855f0c",
		"kyma-project.io/broker-plan-name":    "azure",
		"kyma-project.io/region":              "eastus",
		"kyma-project.io/platform-region":     "cf-eu20",
		"operator.kyma-project.io/kyma-name":  "rt-abc",
		"operator.kyma-project.io/managed-by": "lifecycle-manager",
		// upstream KEB's, beside the contract's
		"kyma-project.io/shoot-name": "c-1a2b3c",
		"kyma-project.io/provider":   "Azure",
	}
	if !maps.Equal(k.Labels, want) {
		t.Errorf("labels = %v, want %v", k.Labels, want)
	}
	if got := k.Annotations; !maps.Equal(got, map[string]string{"skr-domain": "c-1a2b3c.kyma.example.com"}) {
		t.Errorf("annotations = %v, want skr-domain c-1a2b3c.kyma.example.com", got)
	}
	if k.Name != "rt-abc" || k.Namespace != "kcp-system" {
		t.Errorf("name = %s/%s, want kcp-system/rt-abc", k.Namespace, k.Name)
	}
	if k.APIVersion != "operator.kyma-project.io/v1beta2" || k.Kind != "Kyma" {
		t.Errorf("type = %s %s", k.APIVersion, k.Kind)
	}
}

// TestInternalAndBetaLabels: the settings open internal and beta modules by plan or by global
// account; a runtime in neither gets no label at all (not "false").
func TestInternalAndBetaLabels(t *testing.T) {
	t.Parallel()
	s := Settings{
		Internal: Audience{Plans: []string{"preview"}, GlobalAccounts: []string{"ga-internal"}},
		Beta:     Audience{GlobalAccounts: []string{"ga-beta", "ga-internal"}},
	}
	cases := []struct {
		plan, account  string
		internal, beta bool
	}{
		{plan: "azure", account: "ga-other"},
		{plan: "preview", account: "ga-other", internal: true},
		{plan: "azure", account: "ga-internal", internal: true, beta: true},
		{plan: "aws", account: "ga-beta", beta: true},
	}
	for _, tc := range cases {
		l := NewKyma(KymaInput{RuntimeID: "rt", PlanName: tc.plan, GlobalAccountID: tc.account}, s).Labels
		internal, hasInternal := l["operator.kyma-project.io/internal"]
		beta, hasBeta := l["operator.kyma-project.io/beta"]
		if hasInternal != tc.internal || (hasInternal && internal != "true") {
			t.Errorf("plan %s, account %s: internal label %q (set %v), want set %v", tc.plan, tc.account, internal, hasInternal, tc.internal)
		}
		if hasBeta != tc.beta || (hasBeta && beta != "true") {
			t.Errorf("plan %s, account %s: beta label %q (set %v), want set %v", tc.plan, tc.account, beta, hasBeta, tc.beta)
		}
	}
}

func TestNewKymaModulesAndChannel(t *testing.T) {
	t.Parallel()
	custom := []Module{
		{Name: "keda", Channel: controlplane.ChannelFast},
		{Name: "serverless", CustomResourcePolicy: controlplane.CustomResourcePolicyIgnore, Managed: ptr(false)},
	}
	defaults := DefaultModules()
	cases := []struct {
		name        string
		channel     string
		modules     *ModulesParam
		wantModules []Module
		wantChannel string
	}{
		{name: "absent: default modules, regular", wantModules: defaults, wantChannel: controlplane.ChannelRegular},
		{name: "empty object: default modules", modules: &ModulesParam{}, wantModules: defaults, wantChannel: controlplane.ChannelRegular},
		{name: "default true", modules: &ModulesParam{Default: ptr(true)}, wantModules: defaults, wantChannel: controlplane.ChannelRegular},
		{name: "default false: none", modules: &ModulesParam{Default: ptr(false)}, wantModules: nil, wantChannel: controlplane.ChannelRegular},
		{name: "list: exactly those", modules: &ModulesParam{List: custom}, wantModules: custom, wantChannel: controlplane.ChannelRegular},
		{name: "empty list: none", modules: &ModulesParam{List: []Module{}}, wantModules: []Module{}, wantChannel: controlplane.ChannelRegular},
		{name: "configured channel", channel: controlplane.ChannelFast, wantModules: defaults, wantChannel: controlplane.ChannelFast},
		{name: "modules channel wins over configured", channel: controlplane.ChannelRegular, modules: &ModulesParam{Default: ptr(true), Channel: controlplane.ChannelFast}, wantModules: defaults, wantChannel: controlplane.ChannelFast},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := NewKyma(KymaInput{RuntimeID: "rt", Channel: tc.channel, Modules: tc.modules}, Settings{})
			if !reflect.DeepEqual(k.Spec.Modules, tc.wantModules) {
				t.Errorf("modules = %+v, want %+v", k.Spec.Modules, tc.wantModules)
			}
			if k.Spec.Channel != tc.wantChannel {
				t.Errorf("channel = %q, want %q", k.Spec.Channel, tc.wantChannel)
			}
		})
	}
}

// TestNewKymaDoesNotAlias guards the default list and the caller's list against later edits of a CR.
func TestNewKymaDoesNotAlias(t *testing.T) {
	t.Parallel()
	list := []Module{{Name: "keda", Managed: ptr(true)}}
	k := NewKyma(KymaInput{RuntimeID: "rt", Modules: &ModulesParam{List: list}}, Settings{})
	k.Spec.Modules[0].Name = "changed"
	*k.Spec.Modules[0].Managed = false
	if list[0].Name != "keda" || !*list[0].Managed {
		t.Errorf("caller's list changed: %+v", list[0])
	}
	d := NewKyma(KymaInput{RuntimeID: "rt"}, Settings{})
	d.Spec.Modules[0].Name = "changed"
	if DefaultModules()[0].Name == "changed" {
		t.Error("default modules changed through a CR")
	}
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ensureNamespace creates ns unless another test already did (tests share the apiserver).
func ensureNamespace(t *testing.T, c client.Client, ns string) {
	t.Helper()
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", ns, err)
	}
}
