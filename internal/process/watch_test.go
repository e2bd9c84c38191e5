package process

import (
	"context"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

func TestOnlyEventsThatCanEndAWaitWakeOperations(t *testing.T) {
	t.Parallel()
	// What the watch's queue carries: the objects as its transform slims them.
	rt := func(state infrastructuremanager.State, conds ...metav1.Condition) *runtimeEvent {
		r := &infrastructuremanager.Runtime{}
		r.Status.State, r.Status.Conditions = state, conds
		return newRuntimeEvent(served(t, r).(*watchedRuntime))
	}
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	provisioned := func(reason string, at time.Time) metav1.Condition {
		return metav1.Condition{Type: infrastructuremanager.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.NewTime(at)}
	}
	created := provisioned(infrastructuremanager.ReasonShootCreationCompleted, t0)
	failed := func(msg string) metav1.Condition {
		return metav1.Condition{Type: infrastructuremanager.ConditionProvisioned, Status: metav1.ConditionFalse,
			Reason: infrastructuremanager.ReasonGardenerError, Message: msg, LastTransitionTime: metav1.NewTime(t0)}
	}
	secret := func(name string) any {
		s := &metav1.PartialObjectMetadata{}
		s.Name, s.Labels = name, map[string]string{controlplane.LabelRuntimeID: "rt-1"}
		e, err := watchTransform(served(t, s))
		if err != nil {
			t.Fatal(err)
		}
		return e
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
		{"Failed Runtime CR's message changes", rt(infrastructuremanager.StateFailed, failed("a")), rt(infrastructuremanager.StateFailed, failed("b")), false},
		{"recovered from Failed", rt(infrastructuremanager.StateFailed, failed("a")), rt(infrastructuremanager.StateReady, created), true},
		{"ready Runtime CR rewritten (keb's patch)", rt(infrastructuremanager.StateReady, created), rt(infrastructuremanager.StateReady, created), false},
		{"a change applied without leaving Ready (a transition)", rt(infrastructuremanager.StateReady, created),
			rt(infrastructuremanager.StateReady, provisioned(infrastructuremanager.ReasonConfigurationCompleted, t0.Add(time.Minute))), true},
		{"ready Runtime CR seen at start", nil, rt(infrastructuremanager.StateReady), true},
		{"kubeconfig Secret created", nil, kubeconfig, true},
		{"keb creates the runtime's overrides Secret", nil, secret("overrides-rt-1"), false},
		{"kubeconfig Secret rewritten", kubeconfig, kubeconfig, false},
	}
	for _, tc := range tests {
		if got := endsAWait(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: wakes %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAKubeconfigSecretWakesOnlyWhenItsRuntimeMayBeReady: check_runtime
// waits for Ready before it looks for the kubeconfig Secret, so the Secret's
// arrival wakes nothing while the watch shows its Runtime CR short of Ready;
// the Ready event wakes the operation then.
func TestAKubeconfigSecretWakesOnlyWhenItsRuntimeMayBeReady(t *testing.T) {
	t.Parallel()
	store := newSeenStore("kcp-system")
	for id, state := range map[string]infrastructuremanager.State{
		"rt-pending": infrastructuremanager.StatePending, "rt-ready": infrastructuremanager.StateReady, "rt-failed": infrastructuremanager.StateFailed,
	} {
		r := &infrastructuremanager.Runtime{}
		r.Namespace, r.Name, r.Status.State = "kcp-system", id, state
		r.Labels = map[string]string{controlplane.LabelRuntimeID: id}
		store.putRuntime(newRuntimeEvent(served(t, r).(*watchedRuntime)))
	}
	tests := []struct {
		runtimeID string
		wantWait  bool
	}{
		{"rt-pending", true},
		{"rt-failed", true},
		{"rt-ready", false},
		{"rt-unseen", false}, // the watch has not seen its Runtime CR: wake, as before
		{"RT-PENDING", true}, // Runtime CRs are named by the lower-case runtime ID
	}
	for _, tc := range tests {
		kubeconfig := &secretEvent{name: infrastructuremanager.KubeconfigSecretName(tc.runtimeID), id: tc.runtimeID}
		if got := awaitsReady(store, kubeconfig); got != tc.wantWait {
			t.Errorf("kubeconfig Secret of %s: awaits Ready %v, want %v", tc.runtimeID, got, tc.wantWait)
		}
	}
}

// fakeWaker answers Wake as if the job's run that began at runningSince
// went on for the first runningFor calls.
type fakeWaker struct {
	runningSince time.Time
	runningFor   int
	calls        int
}

func (f *fakeWaker) Wake(context.Context, int64) (time.Time, error) {
	f.calls++
	if f.calls <= f.runningFor {
		return f.runningSince, nil
	}
	return time.Time{}, nil
}

// A wake-up that finds the job running a step begun before the change (the
// run may have read the old state, and the queue has not recorded its end
// yet) is retried until the job is no longer running, so it is not lost: the
// operation would otherwise sleep until its next poll. A run begun after the
// change reads it: no retry.
func TestWakeRetriesWhileARunBegunBeforeTheChangeGoesOn(t *testing.T) {
	t.Parallel()
	wokenAt := time.Now()
	tests := []struct {
		name         string
		runningSince time.Time
		want         int
	}{
		{"run begun before the change", wokenAt.Add(-time.Second), 4},
		{"run begun after the change", wokenAt.Add(time.Millisecond), 1},
	}
	for _, tc := range tests {
		q := &fakeWaker{runningSince: tc.runningSince, runningFor: 3}
		w := NewWatcher(nil, nil, "", nil, q, logrus.New())
		w.wake(t.Context(), "rt-1", 7, wokenAt)
		if q.calls != tc.want {
			t.Errorf("%s: Wake called %d times, want %d", tc.name, q.calls, tc.want)
		}
	}
}

// A run that outlasts MaxRun was cut off by the queue and is retried anyway:
// the wake-up stops trying.
func TestWakeGivesUpAfterMaxRun(t *testing.T) {
	t.Parallel()
	wokenAt := time.Now()
	q := &fakeWaker{runningSince: wokenAt.Add(-time.Second), runningFor: 1 << 30}
	w := NewWatcher(nil, nil, "", nil, q, logrus.New())
	w.MaxRun = time.Second
	w.wake(t.Context(), "rt-1", 7, wokenAt)
	if q.calls < 2 || q.calls > 5 {
		t.Errorf("Wake called %d times in a MaxRun of 1s, want 2 to 5 (200 ms, 400 ms, 800 ms apart)", q.calls)
	}
}

// seenInState is a watch that has seen one Runtime CR in one state.
type seenInState struct{ state infrastructuremanager.State }

func (s seenInState) Seen(_ context.Context, _ client.ObjectKey, obj client.Object) bool {
	rt, ok := obj.(*infrastructuremanager.Runtime)
	if ok {
		rt.Status.State = s.state
	}
	return ok
}

func TestGetAwaitedTrustsTheWatchOnlyForTheAwaitedState(t *testing.T) {
	t.Parallel()
	scheme := k8sruntime.NewScheme()
	if err := infrastructuremanager.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	onServer := &infrastructuremanager.Runtime{}
	onServer.Namespace, onServer.Name, onServer.Status.State = "kcp-system", "rt", infrastructuremanager.StateReady
	key := client.ObjectKeyFromObject(onServer)
	tests := []struct {
		name       string
		seen       SeenReader
		wantDirect bool
	}{
		{"the watch saw it Ready", seenInState{infrastructuremanager.StateReady}, false},
		{"the watch saw it Pending: the API server may be ahead", seenInState{infrastructuremanager.StatePending}, true},
		{"no watch", nil, true},
	}
	for _, tc := range tests {
		reads := 0
		direct := fake.NewClientBuilder().WithScheme(scheme).WithObjects(onServer.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				reads++
				return c.Get(ctx, key, obj, opts...)
			}}).Build()
		rt := &infrastructuremanager.Runtime{}
		err := GetAwaited(t.Context(), tc.seen, direct, key, rt, func() bool { return rt.Status.State == infrastructuremanager.StateReady })
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rt.Status.State != infrastructuremanager.StateReady {
			t.Errorf("%s: read %q, want Ready", tc.name, rt.Status.State)
		}
		if got := reads == 1; got != tc.wantDirect {
			t.Errorf("%s: %d API server reads, want a read: %v", tc.name, reads, tc.wantDirect)
		}
	}
}
