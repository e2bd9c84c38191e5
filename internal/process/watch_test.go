package process

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

func TestOnlyEventsThatCanEndAWaitWakeOperations(t *testing.T) {
	t.Parallel()
	rt := func(state infrastructuremanager.State) *infrastructuremanager.Runtime {
		r := &infrastructuremanager.Runtime{}
		r.Status.State = state
		return r
	}
	secret := &metav1.PartialObjectMetadata{}
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
		{"kubeconfig Secret created", nil, secret, true},
		{"kubeconfig Secret rewritten", secret, secret, false},
	}
	for _, tc := range tests {
		if got := endsAWait(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: wakes %v, want %v", tc.name, got, tc.want)
		}
	}
}
