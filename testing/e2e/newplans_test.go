package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/infrasim"
)

// TestAlicloudAndGDCHOnTheRealStack: with upstream's plans alicloud and gdch enabled, an alicloud
// provisioning runs to success on the whole stack (keb, the simulated infrastructure manager,
// a real kube-apiserver with KIM's CRD) from an alicloud pool account, its Runtime CR passes
// kubectl's strict validation with provider alicloud, the region's two zones and the
// Alicloud label; a gdch provisioning fails at once, saying that the control plane refuses its
// Runtime CR (no infrastructure manager API seen has gdch).
func TestAlicloudAndGDCHOnTheRealStack(t *testing.T) {
	s := newStack(t, infrasim.ModeShared, 0, func(c *config.Config) {
		c.EnabledPlans = append(c.EnabledPlans, catalog.AlicloudPlanName, catalog.GDCHPlanName)
	})
	for _, a := range []struct{ name, typ string }{{"alicloud-e2e", hyperscaler.TypeAliCloud}, {"gdch-e2e", hyperscaler.TypeGDCH}} {
		if err := createAccount(t.Context(), s.kcp, a.name, a.typ); err != nil {
			t.Fatal(err)
		}
	}
	provision := func(id, planID, params string) (string, string) {
		code, body := s.call(http.MethodPut, "/oauth/cf-eu10/v2/service_instances/"+id+"?accepts_incomplete=true",
			`{"service_id": "`+serviceID+`", "plan_id": "`+planID+`",
			"context": {"globalaccount_id": "ga-`+id+`", "subaccount_id": "sa-`+id+`", "user_id": "owner@example.com"},
			"parameters": `+params+`}`)
		return s.waitFor(id, s.accepted("provision", code, body), 4*time.Minute)
	}

	if state, desc := provision("e2e-alicloud", catalog.AlicloudPlanID, `{"name": "ali", "region": "eu-west-1"}`); state != "succeeded" {
		t.Fatalf("alicloud provisioning ended %s: %s", state, desc)
	}
	runtimeID := s.runtime("e2e-alicloud")["runtimeID"].(string)
	s.strictApply(runtimeID)
	rt := s.runtimeCR(runtimeID)
	w := rt.Spec.Shoot.Provider.Workers[0]
	if rt.Spec.Shoot.Provider.Type != "alicloud" || rt.Labels["kyma-project.io/provider"] != "Alicloud" ||
		strings.Join(slices.Sorted(slices.Values(w.Zones)), ",") != "eu-west-1a,eu-west-1b" || w.Machine.Type != "ecs.g9i.large" ||
		rt.Spec.Shoot.SecretBindingName != "alicloud-e2e" {
		t.Errorf("alicloud Runtime CR: provider %s, label %s, zones %v, machine %s, binding %s", rt.Spec.Shoot.Provider.Type,
			rt.Labels["kyma-project.io/provider"], w.Zones, w.Machine.Type, rt.Spec.Shoot.SecretBindingName)
	}

	state, desc := provision("e2e-gdch", catalog.GDCHPlanID, `{"name": "gdch"}`)
	if state != "failed" || !strings.Contains(desc, "refuses the Runtime CR") || !strings.Contains(desc, "gdch") {
		t.Fatalf("gdch provisioning ended %s: %s", state, desc)
	}
}
