package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

// TestDeprovisionedWithLeftovers: what a deprovisioning left behind is in
// /info/runtimes (leftovers) and in last_operation's answer for it.
func TestDeprovisionedWithLeftovers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.running("lo-1")
	left, _ := json.Marshal([]map[string]any{{"step": "delete_kyma", "category": "lifecycle-manager",
		"reason": "err_keb_timeout", "what": "the Kyma CR kcp-system/rt-1", "cause": "gave up after 5m0s: Waiting",
		"skippedAt": time.Now().UTC()}})
	desc := "Operation succeeded: the runtime is deprovisioned; left behind: the Kyma CR kcp-system/rt-1 (delete_kyma: gave up after 5m0s: Waiting)"
	if err := b.store.ArchiveAndRemove(b.ctx(), storage.ArchivedInstance{InstanceID: "lo-1", RuntimeID: "rt-1",
		GlobalAccountID: "ga-1", SubAccountID: "sa-1", PlanID: azurePlanID, PlanName: "azure", LastDeprovisioningID: "dep-lo",
		InstanceCreatedAt: time.Now(), DeprovisioningStartedAt: time.Now(), DeprovisioningDescription: desc,
		Leftovers: left}); err != nil {
		t.Fatal(err)
	}
	rt := b.runtime("lo-1")
	lo, _ := rt["leftovers"].([]any)
	if len(lo) != 1 || lo[0].(map[string]any)["step"] != "delete_kyma" {
		t.Errorf("/info/runtimes leftovers %v", rt["leftovers"])
	}
	if d := rt["status"].(map[string]any)["deprovisioning"].(map[string]any)["description"]; d != desc {
		t.Errorf("deprovisioning description %v", d)
	}
	r := b.expect(b.do(http.MethodGet, instancePath("lo-1")+"/last_operation?operation=dep-lo", ""), http.StatusOK)
	if r.body["state"] != "succeeded" || !strings.Contains(r.body["description"].(string), "left behind: the Kyma CR") {
		t.Errorf("last_operation %s", r.raw)
	}
}
