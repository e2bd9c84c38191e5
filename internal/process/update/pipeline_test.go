package update_test

import (
	"testing"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/update"
)

// TestPipelineStepNames pins the step names and order: they are persisted in in-flight
// operations' checkpoints.
func TestPipelineStepNames(t *testing.T) {
	t.Parallel()
	want := []string{"update_btp_manager_credentials"}
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
	ts, ok := pipe.Steps[0].(process.TimedStep)
	if !ok {
		t.Fatal("update_btp_manager_credentials has no deadline of its own")
	}
	if ts.Timeout() != cfg.BTPManagerTimeout {
		t.Errorf("timeout %s, want the configured %s", ts.Timeout(), cfg.BTPManagerTimeout)
	}
	if pipe.Done == "" {
		t.Error("no description for a succeeded update")
	}
}
