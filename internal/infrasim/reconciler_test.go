package infrasim

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// fakeClusters stands in for the cluster pool, so reconciler tests need no apiserver.
type fakeClusters struct {
	mu         sync.Mutex
	ensured    map[string]int
	owned      map[string]bool
	released   []string
	ensureErr  error
	releaseErr error
}

func (f *fakeClusters) Ensure(_ context.Context, runtimeID string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ensureErr != nil {
		return nil, f.ensureErr
	}
	f.ensured[runtimeID]++
	f.owned[runtimeID] = true
	return []byte("kubeconfig of " + runtimeID), nil
}

func (f *fakeClusters) Owns(runtimeID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.owned[runtimeID]
}

func (f *fakeClusters) Release(runtimeID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.releaseErr != nil {
		return f.releaseErr
	}
	delete(f.owned, runtimeID)
	f.released = append(f.released, runtimeID)
	return nil
}

var errBoom = errors.New("boom")

// clock is a settable now for the delay logic.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

type bundle struct {
	r        *reconciler
	c        client.Client
	clusters *fakeClusters
	clock    *clock
	req      reconcile.Request
}

const unitRuntimeID = "rid-unit"

// setup builds a reconciler on a fake control plane holding rt (nil: none).
func setup(t *testing.T, scheme *k8sruntime.Scheme, rt *infrastructuremanager.Runtime, funcs interceptor.Funcs) *bundle {
	t.Helper()
	b := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&infrastructuremanager.Runtime{}).WithInterceptorFuncs(funcs)
	if rt != nil {
		b = b.WithObjects(rt)
	}
	clk := &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	clusters := &fakeClusters{ensured: map[string]int{}, owned: map[string]bool{}}
	c := b.Build()
	return &bundle{
		r: &reconciler{
			client: c, clusters: clusters, delay: time.Minute, log: testLog(), now: clk.now, state: map[types.UID]*progress{},
		},
		c: c, clusters: clusters, clock: clk,
		req: reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "kcp-system", Name: "unit"}},
	}
}

func (b *bundle) runtime(t *testing.T) *infrastructuremanager.Runtime {
	t.Helper()
	rt := &infrastructuremanager.Runtime{}
	if err := b.c.Get(t.Context(), b.req.NamespacedName, rt); err != nil {
		t.Fatalf("reading the Runtime: %v", err)
	}
	return rt
}

func (b *bundle) secretExists(t *testing.T) bool {
	t.Helper()
	err := b.c.Get(t.Context(), client.ObjectKey{Namespace: "kcp-system", Name: infrastructuremanager.KubeconfigSecretName(unitRuntimeID)}, &corev1.Secret{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func unitRuntime(state infrastructuremanager.State, finalizer bool, deleting bool) *infrastructuremanager.Runtime {
	rt := newRuntime("kcp-system", "unit", unitRuntimeID)
	rt.Status.State = state
	rt.UID, rt.Generation = "uid-unit", 1
	if finalizer {
		rt.Finalizers = []string{infrastructuremanager.Finalizer}
	}
	if deleting {
		now := metav1.Now()
		rt.DeletionTimestamp = &now
	}
	return rt
}

func TestReconcileWaitsForTheDelayThenProvisionsOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, testScheme(t), unitRuntime("", false, false), interceptor.Funcs{})

	res, err := b.r.Reconcile(ctx, b.req)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != time.Minute {
		t.Fatalf("first reconcile: RequeueAfter = %s, want the full delay", res.RequeueAfter)
	}
	rt := b.runtime(t)
	if rt.Status.State != infrastructuremanager.StatePending || !controllerutil.ContainsFinalizer(rt, infrastructuremanager.Finalizer) {
		t.Fatalf("after the first reconcile: state %q, finalizers %v; want Pending with %s", rt.Status.State, rt.Finalizers, infrastructuremanager.Finalizer)
	}
	if c := meta.FindStatusCondition(rt.Status.Conditions, infrastructuremanager.ConditionProvisioned); c == nil ||
		c.Status != metav1.ConditionUnknown || c.Reason != infrastructuremanager.ReasonProcessing {
		t.Fatalf("Pending conditions %+v, want Provisioned Unknown Processing", rt.Status.Conditions)
	}

	b.clock.add(40 * time.Second)
	if res, err = b.r.Reconcile(ctx, b.req); err != nil || res.RequeueAfter != 20*time.Second {
		t.Fatalf("mid-delay reconcile = %+v, %v; want RequeueAfter 20s", res, err)
	}
	if n := b.clusters.ensured[unitRuntimeID]; n != 0 {
		t.Fatalf("a cluster was requested %d times before the delay ran out", n)
	}

	b.clock.add(20 * time.Second)
	for i := range 3 { // repeats must not start more clusters
		if res, err = b.r.Reconcile(ctx, b.req); err != nil || res != (reconcile.Result{}) {
			t.Fatalf("reconcile %d after the delay = %+v, %v; want done", i, res, err)
		}
	}
	ready := b.runtime(t)
	if ready.Status.State != infrastructuremanager.StateReady || !ready.Status.ProvisioningCompleted {
		t.Fatalf("status %+v, want Ready with provisioning completed", ready.Status)
	}
	for _, typ := range []string{infrastructuremanager.ConditionProvisioned, infrastructuremanager.ConditionKubeconfigReady,
		infrastructuremanager.ConditionOIDCConfigured, infrastructuremanager.ConditionConfigured} {
		if !meta.IsStatusConditionTrue(ready.Status.Conditions, typ) {
			t.Errorf("Ready without condition %s True: %+v", typ, ready.Status.Conditions)
		}
	}
	if c := meta.FindStatusCondition(ready.Status.Conditions, infrastructuremanager.ConditionProvisioned); c.Reason != infrastructuremanager.ReasonShootCreationCompleted {
		t.Errorf("Provisioned reason %q, want %q", c.Reason, infrastructuremanager.ReasonShootCreationCompleted)
	}
	if !b.secretExists(t) {
		t.Fatal("Ready without a kubeconfig Secret")
	}
	secret := &corev1.Secret{}
	if err := b.c.Get(ctx, client.ObjectKey{Namespace: "kcp-system", Name: infrastructuremanager.KubeconfigSecretName(unitRuntimeID)}, secret); err != nil {
		t.Fatal(err)
	}
	for k, v := range ready.Labels {
		if secret.Labels[k] != v {
			t.Errorf("kubeconfig Secret label %s = %q, want the Runtime's %q", k, secret.Labels[k], v)
		}
	}
	if n := b.clusters.ensured[unitRuntimeID]; n != 1 {
		t.Fatalf("cluster requested %d times, want once", n)
	}
}

// bump changes the Runtime's spec as keb's patch would: a new generation.
func (b *bundle) bump(t *testing.T) {
	t.Helper()
	rt := b.runtime(t)
	rt.Spec.Shoot.Provider.Workers[0].Maximum++
	rt.Generation++
	if err := b.c.Update(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileTakesAChangeThroughPendingToReady: a changed spec of a Ready
// runtime goes Pending (Provisioned Unknown) and, after the delay, Ready
// again with a transition of Provisioned, on the same cluster; nothing like
// an observedGeneration is written.
func TestReconcileTakesAChangeThroughPendingToReady(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, testScheme(t), unitRuntime("", true, false), interceptor.Funcs{})
	b.r.delay = 0
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatal(err)
	}
	before := b.runtime(t)
	if before.Status.State != infrastructuremanager.StateReady {
		t.Fatalf("state %q, want Ready", before.Status.State)
	}
	b.r.delay = time.Minute
	b.clock.add(time.Hour)
	b.bump(t)
	if res, err := b.r.Reconcile(ctx, b.req); err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("reconcile of the change = %+v, %v; want the delay", res, err)
	}
	pending := b.runtime(t)
	if c := meta.FindStatusCondition(pending.Status.Conditions, infrastructuremanager.ConditionProvisioned); pending.Status.State != infrastructuremanager.StatePending ||
		c.Status != metav1.ConditionUnknown {
		t.Fatalf("while applying: %+v", pending.Status)
	}
	b.clock.add(time.Minute)
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatal(err)
	}
	after := b.runtime(t)
	c := meta.FindStatusCondition(after.Status.Conditions, infrastructuremanager.ConditionProvisioned)
	if after.Status.State != infrastructuremanager.StateReady || c.Reason != infrastructuremanager.ReasonConfigurationCompleted ||
		!c.LastTransitionTime.Time.Equal(b.clock.now().Truncate(time.Second)) {
		t.Fatalf("after the change: %+v, want Ready with a new Provisioned transition", after.Status)
	}
	if infrastructuremanager.Fingerprint(after.Status.Conditions) == infrastructuremanager.Fingerprint(before.Status.Conditions) {
		t.Error("the conditions after the change read as before it")
	}
	if n := b.clusters.ensured[unitRuntimeID]; n != 2 { // Ensure is idempotent: the same cluster
		t.Errorf("Ensure called %d times", n)
	}
	// Settled: a further reconcile writes nothing.
	rv := after.ResourceVersion
	if _, err := b.r.Reconcile(ctx, b.req); err != nil || b.runtime(t).ResourceVersion != rv {
		t.Fatalf("a reconcile of a settled runtime wrote it: %v", err)
	}
}

// TestReconcileTransientFault: a Gardener error, Failed for the fault's
// duration, then Pending and Ready, as the infrastructure manager retries;
// the fault hits one rollout once.
func TestReconcileTransientFault(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, testScheme(t), unitRuntime("", true, false), interceptor.Funcs{})
	b.r.delay = 0
	asked := 0
	b.r.faults = func(*infrastructuremanager.Runtime) *Fault {
		asked++
		return &Fault{Message: "throttled", Duration: 30 * time.Second}
	}
	if res, err := b.r.Reconcile(ctx, b.req); err != nil || res.RequeueAfter != 30*time.Second {
		t.Fatalf("reconcile = %+v, %v", res, err)
	}
	failed := b.runtime(t)
	if c := infrastructuremanager.Newest(failed.Status.Conditions); failed.Status.State != infrastructuremanager.StateFailed ||
		c.Reason != infrastructuremanager.ReasonGardenerError || c.Message != "throttled" || c.Status != metav1.ConditionFalse {
		t.Fatalf("status %+v, want Failed with the Gardener error", failed.Status)
	}
	b.clock.add(10 * time.Second)
	if res, err := b.r.Reconcile(ctx, b.req); err != nil || res.RequeueAfter != 20*time.Second {
		t.Fatalf("reconcile during the fault = %+v, %v", res, err)
	}
	b.clock.add(20 * time.Second)
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatal(err)
	}
	if st := b.runtime(t).Status.State; st != infrastructuremanager.StatePending {
		t.Fatalf("after the fault: %q, want Pending", st)
	}
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatal(err)
	}
	if st := b.runtime(t).Status.State; st != infrastructuremanager.StateReady || asked != 1 {
		t.Fatalf("after recovery: %q (the fault was asked %d times), want Ready, asked once", st, asked)
	}
}

// TestReconcilePermanentFault: Failed for as long as the fault lasts, asked
// again at each periodic reconcile; Ready once it is gone.
func TestReconcilePermanentFault(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setup(t, testScheme(t), unitRuntime("", true, false), interceptor.Funcs{})
	b.r.delay = 0
	broken := true
	b.r.faults = func(*infrastructuremanager.Runtime) *Fault {
		if broken {
			return &Fault{Message: "quota exceeded", Permanent: true}
		}
		return nil
	}
	for range 2 {
		if res, err := b.r.Reconcile(ctx, b.req); err != nil || res.RequeueAfter != time.Second {
			t.Fatalf("reconcile = %+v, %v", res, err)
		}
		if st := b.runtime(t).Status.State; st != infrastructuremanager.StateFailed {
			t.Fatalf("state %q, want Failed", st)
		}
	}
	broken = false
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatal(err)
	}
	if st := b.runtime(t).Status.State; st != infrastructuremanager.StateReady {
		t.Fatalf("after the fault: %q, want Ready", st)
	}
}

// TestReconcileRefusesWhatKIMRefuses: a missing required label or a worker
// pool other than the Kyma one is Failed with a configuration error, and
// nothing is created; the corrected Runtime goes on.
func TestReconcileRefusesWhatKIMRefuses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for name, spoil := range map[string]func(rt *infrastructuremanager.Runtime){
		"a required label missing":      func(rt *infrastructuremanager.Runtime) { delete(rt.Labels, "kyma-project.io/broker-plan-id") },
		"a pool not named cpu-worker-0": func(rt *infrastructuremanager.Runtime) { rt.Spec.Shoot.Provider.Workers[0].Name = "pool" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rt := unitRuntime("", true, false)
			good := rt.DeepCopy()
			spoil(rt)
			b := setup(t, testScheme(t), rt, interceptor.Funcs{})
			b.r.delay = 0
			if _, err := b.r.Reconcile(ctx, b.req); err != nil {
				t.Fatal(err)
			}
			refused := b.runtime(t)
			c := infrastructuremanager.Newest(refused.Status.Conditions)
			if refused.Status.State != infrastructuremanager.StateFailed || c.Reason != infrastructuremanager.ReasonConfigurationError {
				t.Fatalf("status %+v, want Failed with a configuration error", refused.Status)
			}
			if b.clusters.ensured[unitRuntimeID] != 0 || b.secretExists(t) {
				t.Fatal("a refused Runtime got a cluster")
			}
			refused.Labels, refused.Spec = good.Labels, good.Spec
			refused.Generation++
			if err := b.c.Update(ctx, refused); err != nil {
				t.Fatal(err)
			}
			if _, err := b.r.Reconcile(ctx, b.req); err != nil {
				t.Fatal(err)
			}
			if st := b.runtime(t).Status.State; st != infrastructuremanager.StateReady {
				t.Fatalf("the corrected Runtime is %q, want Ready", st)
			}
		})
	}
}

func TestReconcileReadyRuntimeWithoutClusterGetsAFreshOne(t *testing.T) {
	t.Parallel()
	b := setup(t, testScheme(t), unitRuntime(infrastructuremanager.StateReady, true, false), interceptor.Funcs{})
	if _, err := b.r.Reconcile(t.Context(), b.req); err != nil {
		t.Fatal(err)
	}
	if n := b.clusters.ensured[unitRuntimeID]; n != 1 {
		t.Fatalf("cluster requested %d times, want once", n)
	}
	if !b.secretExists(t) {
		t.Fatal("kubeconfig not rewritten")
	}
	if got := b.runtime(t).Status.State; got != infrastructuremanager.StateReady {
		t.Fatalf("state = %q, want Ready", got)
	}
}

func TestReconcileTearsDownDeletedRuntimes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rt := unitRuntime(infrastructuremanager.StateReady, true, true)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kcp-system", Name: infrastructuremanager.KubeconfigSecretName(unitRuntimeID)}}
	b := setup(t, testScheme(t), rt, interceptor.Funcs{})
	if err := b.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatal(err)
	}
	if err := b.c.Get(ctx, b.req.NamespacedName, &infrastructuremanager.Runtime{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Runtime still there after teardown (get error %v)", err)
	}
	if b.secretExists(t) {
		t.Fatal("kubeconfig Secret survived the teardown")
	}
	if len(b.clusters.released) != 1 {
		t.Fatalf("released %v, want the runtime's cluster once", b.clusters.released)
	}
	// The CR is gone: a late reconcile is a no-op.
	if _, err := b.r.Reconcile(ctx, b.req); err != nil {
		t.Fatalf("reconciling a gone Runtime: %v", err)
	}
}

// With no delay a new runtime goes straight to Ready: a Pending nobody could
// see is not written.
func TestReconcileWithoutDelayReportsNoPending(t *testing.T) {
	t.Parallel()
	var states []infrastructuremanager.State
	b := setup(t, testScheme(t), unitRuntime("", false, false), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			states = append(states, obj.(*infrastructuremanager.Runtime).Status.State)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}})
	b.r.delay = 0
	if _, err := b.r.Reconcile(t.Context(), b.req); err != nil {
		t.Fatal(err)
	}
	if want := []infrastructuremanager.State{infrastructuremanager.StateReady}; !slices.Equal(states, want) {
		t.Errorf("status writes %v, want %v", states, want)
	}
	if !b.secretExists(t) {
		t.Error("Ready without a kubeconfig Secret")
	}
}

// Error branches: each failure is returned (so controller-runtime retries) and
// leaves the Runtime where a retry can pick it up.
func TestReconcileErrors(t *testing.T) {
	t.Parallel()
	failStatus := func(state infrastructuremanager.State) interceptor.Funcs {
		return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if obj.(*infrastructuremanager.Runtime).Status.State == state {
				return errBoom
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}
	}
	cases := []struct {
		name       string
		runtime    *infrastructuremanager.Runtime
		funcs      interceptor.Funcs
		ensureErr  error
		releaseErr error
		wantErr    string
		wantState  infrastructuremanager.State
		wantSecret bool
		wantGone   bool
		// delay is the simulator's; 0 unless set.
		delay time.Duration
	}{
		{
			name: "reading the Runtime fails", runtime: unitRuntime("", false, false),
			funcs: interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return errBoom
			}},
			wantErr: "reading Runtime",
		},
		{
			name: "adding the finalizer fails", runtime: unitRuntime("", false, false),
			funcs: interceptor.Funcs{Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
				return errBoom
			}},
			wantErr: "adding finalizer",
		},
		{
			name: "setting Pending fails", runtime: unitRuntime("", true, false), delay: time.Minute,
			funcs: failStatus(infrastructuremanager.StatePending), wantErr: "setting Runtime kcp-system/unit to Pending",
		},
		{
			name: "starting the cluster fails", runtime: unitRuntime(infrastructuremanager.StatePending, true, false),
			ensureErr: errBoom, wantErr: "giving runtime rid-unit a cluster", wantState: infrastructuremanager.StatePending,
		},
		{
			name: "writing the kubeconfig fails", runtime: unitRuntime(infrastructuremanager.StatePending, true, false),
			funcs: interceptor.Funcs{Apply: func(context.Context, client.WithWatch, k8sruntime.ApplyConfiguration, ...client.ApplyOption) error {
				return errBoom
			}},
			wantErr: "writing kubeconfig secret", wantState: infrastructuremanager.StatePending,
		},
		{
			name: "setting Ready fails", runtime: unitRuntime(infrastructuremanager.StatePending, true, false),
			funcs: failStatus(infrastructuremanager.StateReady), wantErr: "to Ready", wantState: infrastructuremanager.StatePending, wantSecret: true,
		},
		{
			name: "setting Failed fails", runtime: newFailing(unitRuntime(infrastructuremanager.StatePending, true, false)),
			funcs: failStatus(infrastructuremanager.StateFailed), wantErr: "to Failed", wantState: infrastructuremanager.StatePending,
		},
		{
			name: "setting Terminating fails", runtime: unitRuntime(infrastructuremanager.StateReady, true, true),
			funcs: failStatus(infrastructuremanager.StateTerminating), wantErr: "to Terminating", wantState: infrastructuremanager.StateReady,
		},
		{
			name: "stopping the cluster fails", runtime: unitRuntime(infrastructuremanager.StateReady, true, true),
			releaseErr: errBoom, wantErr: "tearing down runtime rid-unit", wantState: infrastructuremanager.StateTerminating,
		},
		{
			name: "deleting the kubeconfig fails", runtime: unitRuntime(infrastructuremanager.StateReady, true, true),
			funcs: interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
				return errBoom
			}},
			wantErr: "deleting kubeconfig secret", wantState: infrastructuremanager.StateTerminating,
		},
		{
			name: "removing the finalizer fails", runtime: unitRuntime(infrastructuremanager.StateReady, true, true),
			funcs: interceptor.Funcs{Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
				return errBoom
			}},
			wantErr: "removing finalizer", wantState: infrastructuremanager.StateTerminating,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, testScheme(t), tc.runtime, tc.funcs)
			b.r.delay = tc.delay
			b.clusters.ensureErr, b.clusters.releaseErr = tc.ensureErr, tc.releaseErr
			if tc.runtime.Annotations["fail"] != "" {
				b.r.faults = func(*infrastructuremanager.Runtime) *Fault { return &Fault{Message: "no capacity", Permanent: true} }
			}
			_, err := b.r.Reconcile(t.Context(), b.req)
			if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Reconcile() error = %v, want errBoom wrapped with %q", err, tc.wantErr)
			}
			if tc.wantState == "" {
				return
			}
			rt := &infrastructuremanager.Runtime{}
			if err := b.c.Get(t.Context(), b.req.NamespacedName, rt); err != nil {
				t.Fatalf("Runtime gone after a failed reconcile: %v", err)
			}
			if rt.Status.State != tc.wantState {
				t.Errorf("state = %q, want %q", rt.Status.State, tc.wantState)
			}
			if !controllerutil.ContainsFinalizer(rt, infrastructuremanager.Finalizer) {
				t.Error("the finalizer is gone after a failed reconcile")
			}
			if got := b.secretExists(t); got != tc.wantSecret {
				t.Errorf("kubeconfig Secret exists = %v, want %v", got, tc.wantSecret)
			}
		})
	}
}

// A write rejected for a stale resourceVersion means the cache lags our own
// writes: read again soon, without an error (and its log line).
func TestReconcileRetriesStaleReadsQuietly(t *testing.T) {
	t.Parallel()
	conflict := apierrors.NewConflict(schema.GroupResource{Group: infrastructuremanager.GroupVersion.Group, Resource: "runtimes"}, "unit", errors.New("stale"))
	b := setup(t, testScheme(t), unitRuntime("", true, false), interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return conflict
		},
	})
	res, err := b.r.Reconcile(t.Context(), b.req)
	if err != nil || res.RequeueAfter != staleRetry {
		t.Fatalf("Reconcile() = %+v, %v; want RequeueAfter %s and no error", res, err, staleRetry)
	}
}

// newFailing marks a test Runtime for a permanent fault.
func newFailing(rt *infrastructuremanager.Runtime) *infrastructuremanager.Runtime {
	rt.Annotations = map[string]string{"fail": "true"}
	return rt
}
