package update_test

import (
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/update"
)

// TestPipelineStepNames pins the step names and order: they are persisted in in-flight
// operations' checkpoints.
func TestPipelineStepNames(t *testing.T) {
	t.Parallel()
	want := []string{"update_initialization", "update_hyperscaler_account", "update_runtime", "check_runtime_update",
		"update_kyma", "relabel_global_account", "update_btp_manager_credentials"}
	cfg := testConfig()
	pipe := update.Pipeline(update.Deps{Config: cfg})
	if len(pipe.Steps) != len(want) {
		t.Fatalf("%d steps, want %d", len(pipe.Steps), len(want))
	}
	for i, s := range pipe.Steps {
		if s.Name() != want[i] {
			t.Errorf("step %d is %q, want %q", i, s.Name(), want[i])
		}
	}
	timeouts := map[string]time.Duration{"update_hyperscaler_account": cfg.AccountTimeout,
		"check_runtime_update": cfg.RuntimeTimeout, "update_btp_manager_credentials": cfg.BTPManagerTimeout}
	for _, s := range pipe.Steps {
		ts, ok := s.(process.TimedStep)
		if want, timed := timeouts[s.Name()]; ok != timed || ok && ts.Timeout() != want {
			t.Errorf("step %s: timed %v, want %v (timeout %s)", s.Name(), ok, timed, want)
		}
	}
	if pipe.Done == "" {
		t.Error("no description for a succeeded update")
	}
}
