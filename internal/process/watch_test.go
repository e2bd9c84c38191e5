package process

import (
	"context"
	"testing"

	"github.com/sirupsen/logrus"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/runtime"
)

func TestOnlyEventsThatCanEndAWaitWakeOperations(t *testing.T) {
	t.Parallel()
	rt := func(state string) *runtime.Runtime {
		r := &runtime.Runtime{}
		r.Status.State = state
		return r
	}
	secret := func(name string) *metav1.PartialObjectMetadata {
		s := &metav1.PartialObjectMetadata{}
		s.Name, s.Labels = name, map[string]string{runtime.LabelRuntimeID: "rt-1"}
		return s
	}
	kubeconfig, overrides := secret(runtime.KubeconfigSecretName("rt-1")), secret("overrides-rt-1")
	tests := []struct {
		name     string
		old, obj any
		want     bool
	}{
		{"keb creates a Runtime CR", nil, rt(""), false},
		{"infrastructure manager reports Pending", rt(""), rt(runtime.StatePending), false},
		{"Pending message changes", rt(runtime.StatePending), rt(runtime.StatePending), false},
		{"cluster ready", rt(runtime.StatePending), rt(runtime.StateReady), true},
		{"cluster failed", rt(runtime.StatePending), rt(runtime.StateFailed), true},
		{"ready Runtime CR rewritten", rt(runtime.StateReady), rt(runtime.StateReady), false},
		{"ready Runtime CR seen at start", nil, rt(runtime.StateReady), true},
		{"kubeconfig Secret created", nil, kubeconfig, true},
		{"kubeconfig Secret rewritten", kubeconfig, kubeconfig, false},
		// keb writes it itself, while the operation runs: a wake-up would
		// only retry the running job.
		{"overrides Secret created", nil, overrides, false},
	}
	for _, tc := range tests {
		if got := endsAWait(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: wakes %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakeWaker answers Wake with running for the first runningFor calls.
type fakeWaker struct {
	runningFor int
	calls      int
}

func (f *fakeWaker) Wake(context.Context, int64) (bool, error) {
	f.calls++
	return f.calls <= f.runningFor, nil
}

// A wake-up that finds the job still running (the queue has not recorded
// its snooze yet) is retried until the job is no longer running, so it is
// not lost: the operation would otherwise sleep until its next poll.
func TestWakeRetriesWhileTheJobIsRunning(t *testing.T) {
	t.Parallel()
	q := &fakeWaker{runningFor: 3}
	w := NewWatcher(nil, nil, "", nil, q, logrus.New())
	w.wake(t.Context(), "rt-1", 7)
	if q.calls != 4 {
		t.Errorf("Wake called %d times, want 4: three while running, one that woke it", q.calls)
	}
}
