package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// TestAlicloudAndGDCHOnTheRealStack: with upstream's plans alicloud and gdch enabled, each
// provisioning draws its pool account and then fails at once on the whole stack (keb, the simulated
// infrastructure manager, a real kube-apiserver with KIM's CRD), saying that the control plane
// refuses its Runtime CR: the CRD's provider types are contracts.md's aws, azure, gcp and
// openstack, and keb's copy is no more lenient than the real one. No Runtime CR is left behind.
func TestAlicloudAndGDCHOnTheRealStack(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) {
		c.EnabledPlans = append(c.EnabledPlans, catalog.AlicloudPlanName, catalog.GDCHPlanName)
	})
	for _, a := range []struct{ name, typ string }{{"alicloud-e2e", hyperscaler.TypeAliCloud}, {"gdch-e2e", hyperscaler.TypeGDCH}} {
		if err := createAccount(t.Context(), s.kcp, a.name, a.typ); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ id, planID, params, provider string }{
		{"e2e-alicloud", catalog.AlicloudPlanID, `{"name": "ali", "region": "eu-west-1"}`, "alicloud"},
		{"e2e-gdch", catalog.GDCHPlanID, `{"name": "gdch"}`, "gdch"},
	} {
		code, body := s.call(http.MethodPut, "/oauth/cf-eu10/v2/service_instances/"+tc.id+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+tc.planID+`",
			"context": {"globalaccount_id": "ga-`+tc.id+`", "subaccount_id": "sa-`+tc.id+`", "user_id": "owner@example.com"},
			"parameters": `+tc.params+`}`)
		state, desc := s.waitFor(tc.id, s.accepted("provision", code, body), 4*time.Minute)
		if state != "failed" || !strings.Contains(desc, "refuses the Runtime CR") || !strings.Contains(desc, `"`+tc.provider+`"`) {
			t.Fatalf("%s provisioning ended %s: %s", tc.provider, state, desc)
		}
		rts := &im.RuntimeList{}
		if err := s.kcp.List(t.Context(), rts, client.MatchingLabels{"kyma-project.io/instance-id": tc.id}); err != nil {
			t.Fatal(err)
		}
		if len(rts.Items) != 0 {
			t.Errorf("%s: a refused provisioning left Runtime CR %s", tc.provider, rts.Items[0].Name)
		}
	}
}
