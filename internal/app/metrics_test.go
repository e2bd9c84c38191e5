package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/testing/promtest"
)

// An accepted provisioning that no worker took yet shows on the dashboards:
// one instance provisioning, one operation in progress, one job waiting in
// the queue; refused tokens are counted by reason.
func TestOperationGaugesAndRejections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.expect(b.do(http.MethodPut, provisionPath("inst-m"), provisionBody(azurePlanID, `{"name":"c1"}`, "")), http.StatusAccepted)

	b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", "", withoutHeader("Authorization")), http.StatusUnauthorized)
	expired, err := b.key.Mint(testIssuer, testAud, "test", []string{auth.ScopeBrokerWrite}, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", "", withHeader("Authorization", "Bearer "+expired)), http.StatusUnauthorized)
	b.expect(b.do(http.MethodGet, "/oauth/v2/catalog", "", withHeader("Authorization", "Bearer "+b.mint(auth.ScopeCLDRead))), http.StatusForbidden)

	page := promtest.Scrape(t, b.srv.URL+"/metrics")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kcp_keb_v2_instances_total", nil, 1},
		{"keb_instances", map[string]string{"plan_id": azurePlanID, "state": "provisioning"}, 1},
		{"kcp_keb_v2_operations_provisioning_in_progress_total", map[string]string{"plan_id": azurePlanID}, 1},
		{"keb_queue_jobs", map[string]string{"state": "available"}, 1},
		{"keb_auth_rejections_total", map[string]string{"reason": auth.RejectMissingToken}, 1},
		{"keb_auth_rejections_total", map[string]string{"reason": auth.RejectExpired}, 1},
		{"keb_auth_rejections_total", map[string]string{"reason": auth.RejectInsufficientScope}, 1},
		{"keb_auth_rejections_total", map[string]string{"reason": auth.RejectBadSignature}, 0},
	} {
		if got := page.Must(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if age := page.Must(t, "keb_queue_oldest_available_job_age_seconds", nil); age < 0 {
		t.Errorf("oldest waiting job age %v", age)
	}
}
