package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// TestOperationResult checks kcp_keb_v2_operation_result as upstream's
// alerts read it: one series per operation for its current state, the
// failing component and reason on a failure, gone 3 hours after the end.
func TestOperationResult(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	m := NewOperations(reg, nil)
	m.results.now = func() time.Time { return clock }
	inst := storage.Instance{InstanceID: "inst-1", GlobalAccountID: "ga-1", RuntimeID: "rt-1", ShootName: "c-1",
		PlanID: "plan-1", Provider: "aws"}
	op := storage.Operation{ID: "op-1", InstanceID: "inst-1", Type: storage.OperationTypeProvision,
		State: storage.OperationInProgress}
	m.OperationRunning(op, inst)
	running := `
# HELP kcp_keb_v2_operation_result 1 for the current state of each operation this replica ran in the last 3 hours, with the component that failed it (error_category) and a short reason code (error_reason).
# TYPE kcp_keb_v2_operation_result gauge
kcp_keb_v2_operation_result{error="",error_category="",error_reason="",global_account_id="ga-1",instance_id="inst-1",operation_id="op-1",plan_id="plan-1",provider="aws",runtime_id="rt-1",shoot="c-1",state="in progress",type="provision"} 1
`
	if got := exposition(t, reg, "kcp_keb_v2_operation_result"); got != running {
		t.Fatalf("got\n%s\nwant\n%s", got, running)
	}
	op.State, op.ErrorMessage = storage.OperationFailed, "step check_runtime timed out after 1h0m0s"
	m.OperationFinished(process.Finished{Operation: op, Instance: inst,
		Category: process.CategoryInfrastructureManager, Reason: process.ReasonTimeout})
	failed := strings.Replace(running,
		`error="",error_category="",error_reason=""`,
		`error="step check_runtime timed out after 1h0m0s",error_category="infrastructure-manager",error_reason="err_keb_timeout"`, 1)
	failed = strings.Replace(failed, `state="in progress"`, `state="failed"`, 1)
	if got := exposition(t, reg, "kcp_keb_v2_operation_result"); got != failed {
		t.Fatalf("got\n%s\nwant\n%s", got, failed)
	}
	clock = clock.Add(3*time.Hour + time.Second)
	if got := exposition(t, reg, "kcp_keb_v2_operation_result"); got != "" {
		t.Errorf("3 hours after the operation ended:\n%s\nwant no series", got)
	}
}

func TestStepsSkippedAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewOperations(reg, nil)
	m.StepSkipped(storage.OperationTypeDeprovision, process.Leftover{Step: "delete_kyma", Category: process.CategoryLifecycleManager})
	want := `keb_steps_skipped_total{error_category="lifecycle-manager",step="delete_kyma",type="deprovision"} 1`
	if got := exposition(t, reg, "keb_steps_skipped_total"); !strings.Contains(got, want) {
		t.Errorf("got\n%s\nwant %s", got, want)
	}
}

// exposition is the text format of the named metric family; "" when reg
// has no series of it.
func exposition(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		b.WriteString("\n")
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestUpstreamStepHistograms: a step run is observed under upstream's name
// and labels too.
func TestUpstreamStepHistograms(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewOperations(reg, nil)
	m.StepRan(storage.OperationTypeDeprovision, "plan-1", "delete_kyma", process.OutcomeWait, 10*time.Millisecond)
	got := exposition(t, reg, "kcp_keb_v2_deprovisioning_step_duration_seconds")
	if !strings.Contains(got, `kcp_keb_v2_deprovisioning_step_duration_seconds_count{plan_id="plan-1",step_name="delete_kyma"} 1`) {
		t.Errorf("got\n%s", got)
	}
}
