package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/infrasim"
	"github.com/kyma-keb/keb/testing/logtest"
	"github.com/kyma-keb/keb/testing/promtest"
)

// TestOperationMetricsAndLogs provisions and deprovisions one runtime and
// checks what an operator's dashboard and log search would show: finished
// operations by plan, step timings by outcome, accept-to-success time, the
// account released as dirty, and every log line of the work naming its
// operation, instance and step.
func TestOperationMetricsAndLogs(t *testing.T) {
	logs := &logtest.Buffer{}
	log := logrus.New()
	log.SetOutput(logs)
	log.SetFormatter(&logrus.JSONFormatter{})
	log.SetLevel(logrus.DebugLevel)
	s := newStackLogging(t, log, infrasim.ModeShared, 0, func(c *config.Config) { c.MetricsCensusInterval = time.Nanosecond })
	freshAccount(t, s.kcp, "azure-observe")

	const instanceID = "e2e-observe-1"
	opID := s.provisionAzure(instanceID, "ga-observe")
	plan := map[string]string{"plan_id": azurePlanID}
	page := promtest.ScrapeUntil(t, s.url+"/metrics", "kcp_keb_v2_operations_provisioning_succeeded_total", plan)
	if n := page.Must(t, "kcp_keb_v2_operations_provisioning_succeeded_total", plan); n != 1 {
		t.Errorf("provisionings succeeded: %v, want 1", n)
	}
	if n := page.Must(t, "kcp_keb_v2_provisioning_duration_minutes", plan); n != 1 {
		t.Errorf("provisioning durations observed: %v, want 1", n)
	}
	if n := page.Must(t, "keb_instances", map[string]string{"plan_id": azurePlanID, "state": "succeeded"}); n < 1 {
		t.Errorf("succeeded azure instances: %v", n)
	}
	for _, step := range []string{"resolve_hyperscaler_secret", "create_runtime", "apply_kyma"} {
		if n := page.Must(t, "keb_step_duration_seconds", map[string]string{"type": "provision", "step": step, "outcome": "done"}); n < 1 {
			t.Errorf("step %s done %v times", step, n)
		}
	}
	if n := page.Must(t, "keb_step_duration_seconds", map[string]string{"type": "provision", "step": "check_runtime", "outcome": "wait"}); n < 1 {
		t.Errorf("check_runtime never waited for the cluster: %v", n)
	}
	if n := page.Must(t, "keb_account_pool_secrets", map[string]string{"hyperscaler_type": "azure", "status": "claimed"}); n < 1 {
		t.Errorf("claimed azure accounts: %v", n)
	}
	// Upstream's name of the same census.
	if n := page.Must(t, "kcp_keb_v2_claimed_credentials_bindings", map[string]string{"hyperscaler_type": "azure"}); n < 1 {
		t.Errorf("kcp_keb_v2_claimed_credentials_bindings for azure: %v", n)
	}

	deprovOp := s.deprovisionAzure(instanceID)
	page = promtest.ScrapeUntil(t, s.url+"/metrics", "kcp_keb_v2_operations_deprovisioning_succeeded_total", plan)
	if n := page.Must(t, "kcp_keb_v2_operations_deprovisioning_succeeded_total", plan); n != 1 {
		t.Errorf("deprovisionings succeeded: %v, want 1", n)
	}
	if n := page.Must(t, "keb_account_pool_secrets", map[string]string{"hyperscaler_type": "azure", "status": "dirty"}); n < 1 {
		t.Errorf("dirty azure accounts after deprovisioning: %v", n)
	}

	// Logs: every line of a worker's work on an operation names its
	// instance and step.
	seen := map[string]bool{}
	for _, entry := range logs.Lines(t) {
		id, ok := entry["operation_id"]
		if _, request := entry["request_id"]; !ok || request {
			continue // the request that accepted it names its request instead
		}
		if entry["instance_id"] != instanceID || entry["step"] == nil || entry["step"] == "" {
			t.Errorf("log line of operation %v without its instance or step: %v", id, entry)
		}
		seen[id.(string)] = true
	}
	if !seen[opID] || !seen[deprovOp] {
		t.Errorf("no log lines for the provisioning (%v) or the deprovisioning (%v)", seen[opID], seen[deprovOp])
	}
}

// provisionAzure provisions an azure runtime for tenant and waits for its
// success; it returns the operation ID.
func (s *stack) provisionAzure(instanceID, tenant string) string {
	s.t.Helper()
	code, body := s.call(http.MethodPut, "/oauth/v2/service_instances/"+instanceID+"?accepts_incomplete=true",
		`{"service_id": "`+serviceID+`", "plan_id": "`+azurePlanID+`",
		"context": {"globalaccount_id": "`+tenant+`", "subaccount_id": "sa-`+tenant+`", "user_id": "me@example.com"},
		"parameters": {"name": "`+tenant+`"}}`)
	op := s.accepted("provision", code, body)
	if state, desc := s.waitFor(instanceID, op, 4*time.Minute); state != "succeeded" {
		s.t.Fatalf("provisioning ended %s: %s", state, desc)
	}
	return op
}

// deprovisionAzure deprovisions an azure instance and waits for its success;
// it returns the operation ID.
func (s *stack) deprovisionAzure(instanceID string) string {
	s.t.Helper()
	code, body := s.call(http.MethodDelete, "/oauth/v2/service_instances/"+instanceID+
		"?accepts_incomplete=true&service_id="+serviceID+"&plan_id="+azurePlanID, "")
	op := s.accepted("deprovision", code, body)
	if state, desc := s.waitFor(instanceID, op, 4*time.Minute); state != "succeeded" {
		s.t.Fatalf("deprovisioning ended %s: %s", state, desc)
	}
	return op
}
