package process

import (
	"context"
	"testing"

	"github.com/sirupsen/logrus"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

func TestOnlyEventsThatCanEndAWaitWakeOperations(t *testing.T) {
	t.Parallel()
	rt := func(state infrastructuremanager.State) *infrastructuremanager.Runtime {
		r := &infrastructuremanager.Runtime{}
		r.Status.State = state
		return r
	}
	secret := func(name string) *metav1.PartialObjectMetadata {
		s := &metav1.PartialObjectMetadata{}
		s.Name, s.Labels = name, map[string]string{controlplane.LabelRuntimeID: "rt-1"}
		return s
	}
	kubeconfig := secret(infrastructuremanager.KubeconfigSecretName("rt-1"))
	tests := []struct {
		name     string
		old, obj any
		want     bool
	}{
		{"keb creates a Runtime CR", nil, rt(""), false},
		{"infrastructure manager reports Pending", rt(""), rt(infrastructuremanager.StatePending), false},
		{"Pending message changes", rt(infrastructuremanager.StatePending), rt(infrastructuremanager.StatePending), false},
		{"cluster ready", rt(infrastructuremanager.StatePending), rt(infrastructuremanager.StateReady), true},
		{"cluster failed", rt(infrastructuremanager.StatePending), rt(infrastructuremanager.StateFailed), true},
		{"ready Runtime CR rewritten", rt(infrastructuremanager.StateReady), rt(infrastructuremanager.StateReady), false},
		{"ready Runtime CR seen at start", nil, rt(infrastructuremanager.StateReady), true},
		{"kubeconfig Secret created", nil, kubeconfig, true},
		{"kubeconfig Secret rewritten", kubeconfig, kubeconfig, false},
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
