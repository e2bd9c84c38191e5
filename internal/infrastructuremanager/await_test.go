package infrastructuremanager

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)}
}

// TestWriteApplied walks the rule of docs/architecture.md: Ready after the
// write counts once the status shows the infrastructure manager took the
// change up (it left Ready, or a condition changed), or once the grace is
// over.
func TestWriteApplied(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := []metav1.Condition{cond(ConditionProvisioned, metav1.ConditionTrue, ReasonShootCreationCompleted, "done", t0.Add(-time.Hour))}
	rt := func(state State, conds ...metav1.Condition) *Runtime {
		return &Runtime{Status: RuntimeStatus{State: state, Conditions: conds}}
	}
	const grace = time.Minute
	written := &Runtime{Status: RuntimeStatus{State: StateReady, Conditions: ready}}
	written.Generation = 4

	t.Run("Ready as written, within the grace: not yet, look again when it ends", func(t *testing.T) {
		w := NewWrite(written, t0)
		applied, next := w.Applied(rt(StateReady, ready...), t0.Add(20*time.Second), grace)
		if applied || next != 40*time.Second {
			t.Fatalf("applied %v, next %s", applied, next)
		}
	})
	t.Run("Ready as written, the grace over: applied", func(t *testing.T) {
		w := NewWrite(written, t0)
		if applied, _ := w.Applied(rt(StateReady, ready...), t0.Add(grace), grace); !applied {
			t.Fatal("not applied after the grace")
		}
	})
	t.Run("Pending, then Ready: applied", func(t *testing.T) {
		w := NewWrite(written, t0)
		pending := cond(ConditionProvisioned, metav1.ConditionUnknown, ReasonProcessing, "update in progress", t0.Add(time.Second))
		if applied, next := w.Applied(rt(StatePending, pending), t0.Add(time.Second), grace); applied || next != 0 || !w.LeftReady {
			t.Fatalf("Pending: applied %v, next %s, left Ready %v", applied, next, w.LeftReady)
		}
		// Even a Ready whose conditions read as before counts now.
		if applied, _ := w.Applied(rt(StateReady, ready...), t0.Add(2*time.Second), grace); !applied {
			t.Fatal("Ready after Pending is not applied")
		}
	})
	t.Run("Failed is waited through", func(t *testing.T) {
		w := NewWrite(written, t0)
		failed := cond(ConditionProvisioned, metav1.ConditionFalse, ReasonGardenerError, "quota", t0.Add(time.Second))
		if applied, _ := w.Applied(rt(StateFailed, failed), t0.Add(time.Hour), grace); applied {
			t.Fatal("Failed counted as applied")
		}
	})
	t.Run("a transition while Ready (missed Pending): applied", func(t *testing.T) {
		w := NewWrite(written, t0)
		again := cond(ConditionProvisioned, metav1.ConditionTrue, ReasonConfigurationCompleted, "Runtime processing completed successfully", t0.Add(3*time.Second))
		if applied, _ := w.Applied(rt(StateReady, again), t0.Add(4*time.Second), grace); !applied {
			t.Fatal("a new transition while Ready is not applied")
		}
	})
}

func TestFingerprintIgnoresOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	a := cond(ConditionProvisioned, metav1.ConditionTrue, "R", "m", t0)
	b := cond(ConditionConfigured, metav1.ConditionTrue, "R", "m", t0)
	if Fingerprint([]metav1.Condition{a, b}) != Fingerprint([]metav1.Condition{b, a}) {
		t.Error("order changes the fingerprint")
	}
	c := b
	c.Message = "other"
	if Fingerprint([]metav1.Condition{a, b}) == Fingerprint([]metav1.Condition{a, c}) {
		t.Error("a new message leaves the fingerprint")
	}
	if Fingerprint(nil) != "" {
		t.Error("no conditions have a fingerprint")
	}
}

func TestExplainShowsTheNewestCondition(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	st := RuntimeStatus{State: StateFailed, Conditions: []metav1.Condition{
		cond(ConditionKubeconfigReady, metav1.ConditionTrue, ReasonGardenerClusterReady, "ready", t0),
		cond(ConditionProvisioned, metav1.ConditionFalse, ReasonGardenerError, "quota exceeded", t0.Add(time.Minute)),
		cond(ConditionConfigured, metav1.ConditionTrue, ReasonConfigurationCompleted, "old", t0.Add(-time.Minute)),
	}}
	if got, want := Explain(st), "Failed, GardenerErr: quota exceeded"; got != want {
		t.Errorf("Explain = %q, want %q", got, want)
	}
	if got := Explain(RuntimeStatus{}); got != "requested" {
		t.Errorf("Explain of no status = %q", got)
	}
}
