package app_test

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// TestColocationReadsSeedsFromTheControlPlane: colocateControlPlane is accepted in the regions
// the control plane's ConfigMap kcp-system/gardener-seeds-cache lists for the provider (or under
// "default") that the plan offers in the platform region, read on every such provisioning as
// upstream reads it (a change needs no restart). A region without a seed is the request's
// mistake (400, naming the regions that would do); a ConfigMap that is missing or lists nothing
// for the provider is not (503, naming what is missing); either leaves nothing behind.
// colocateControlPlane false reads nothing.
func TestColocationReadsSeedsFromTheControlPlane(t *testing.T) {
	t.Parallel()
	env, err := k8stest.Start([]*apiextensionsv1.CustomResourceDefinition{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kcp.kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	kcp, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kcp.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kcp-system"}}); err != nil {
		t.Fatal(err)
	}
	b := setupWith(t, func(c *config.Config) { c.Engine.KCPKubeconfig = kubeconfig }, io.Discard)

	n := 0
	put := func(prefix, planID, params string) response {
		t.Helper()
		n++
		id := fmt.Sprintf("colo-%d", n)
		ctx := fmt.Sprintf(`"globalaccount_id":"ga-colo-%d","subaccount_id":"sa-colo-%d","user_id":"u@example.com"`, n, n)
		return b.do(http.MethodPut, prefix+"/v2/service_instances/"+id+"?accepts_incomplete=true", provisionBody(planID, params, ctx))
	}
	refused := func(r response, status int, key string, want ...string) {
		t.Helper()
		b.expectOSBError(r, status, key)
		for _, w := range want {
			if !strings.Contains(r.body["description"].(string), w) {
				t.Errorf("description %q lacks %q", r.body["description"], w)
			}
		}
	}
	colocated := func(region string) string {
		return `{"name":"c","region":"` + region + `","colocateControlPlane":true}`
	}

	// No ConfigMap: the operator's problem, said so; colocateControlPlane false reads nothing.
	refused(put("/oauth", azurePlanID, colocated("westeurope")), http.StatusServiceUnavailable, "ServiceUnavailable",
		"colocateControlPlane cannot be checked", "no ConfigMap kcp-system/gardener-seeds-cache")
	b.expect(put("/oauth", azurePlanID, `{"name":"c","region":"westeurope","colocateControlPlane":false}`), http.StatusAccepted)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gardener-seeds-cache", Namespace: "kcp-system"},
		Data: map[string]string{"azure": "seedRegions:\n- westeurope\n- northeurope\n- eastus2\n"}}
	if err := kcp.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	b.expect(put("/oauth", azurePlanID, colocated("westeurope")), http.StatusAccepted)
	// eastus2 has a seed but is no region of the plan: not offered.
	refused(put("/oauth", azurePlanID, colocated("japaneast")), http.StatusBadRequest, "BadRequest",
		"cannot colocate the control plane in the japaneast region: Azure can have control planes in the following regions: northeurope, westeurope")
	// On cf-ch20 the plan offers switzerlandnorth only, which has no seed.
	refused(put("/oauth/cf-ch20", azurePlanID, `{"name":"c","colocateControlPlane":true}`), http.StatusBadRequest, "BadRequest",
		"cannot colocate the control plane in the switzerlandnorth region: Azure can have control planes in the following regions: none")
	// No key for AWS and no default key.
	refused(put("/oauth", awsPlanID, colocated("eu-central-1")), http.StatusServiceUnavailable, "ServiceUnavailable",
		`ConfigMap kcp-system/gardener-seeds-cache has no key "aws" and no key "default"`)

	// The operator adds a seed and a default: the next provisioning sees them.
	cm.Data["azure"] += "- japaneast\n"
	cm.Data["default"] = "seedRegions: [eu-central-1]\n"
	if err := kcp.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	b.expect(put("/oauth", azurePlanID, colocated("japaneast")), http.StatusAccepted)
	b.expect(put("/oauth", awsPlanID, colocated("eu-central-1")), http.StatusAccepted)
	refused(put("/oauth", awsPlanID, colocated("us-east-1")), http.StatusBadRequest, "BadRequest",
		"AWS can have control planes in the following regions: eu-central-1")

	cm.Data["default"] = "seeds: [eu-central-1]\n"
	if err := kcp.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	refused(put("/oauth", awsPlanID, colocated("eu-central-1")), http.StatusServiceUnavailable, "ServiceUnavailable",
		`key "default"`, `unknown field "seeds"`)

	if got := b.count(`SELECT count(*) FROM instances`); got != 4 {
		t.Errorf("%d instances stored, want the 4 accepted", got)
	}
}
