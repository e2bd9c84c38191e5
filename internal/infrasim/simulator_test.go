package infrasim

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// The whole life of a dedicated runtime, read the way keb reads it: through
// runtimeclient.Cache, hence in kcp-system (the only test using that namespace).
func TestDedicatedRuntimeLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	ns := controlplane.Namespace
	createNamespace(t, kcp, ns)
	const delay = 2 * time.Second
	sim, _ := startSimulator(t, ns, Options{Mode: ModeDedicated, Delay: delay})

	const runtimeID = "5d1d5a4e-dedicated"
	rt := newRuntime(ns, "dedicated", runtimeID)
	created := time.Now()
	if err := kcp.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rt)
	cache := runtimeclient.NewCache(kcp, controlplane.Namespace, testScheme(t), runtimeclient.Bounds{})
	waitForState(t, kcp, key, infrastructuremanager.StatePending)
	if _, err := cache.Client(ctx, runtimeID); !errors.Is(err, runtimeclient.ErrKubeconfigNotFound) {
		t.Fatalf("while Pending: Client() error = %v, want ErrKubeconfigNotFound", err)
	}

	ready := waitForState(t, kcp, key, infrastructuremanager.StateReady)
	if took := time.Since(created); took < delay {
		t.Errorf("Ready after %s, before the %s delay", took, delay)
	}
	if !controllerutil.ContainsFinalizer(ready, infrastructuremanager.Finalizer) {
		t.Errorf("Ready Runtime has finalizers %v, want %s", ready.Finalizers, infrastructuremanager.Finalizer)
	}

	rc, err := cache.Client(ctx, runtimeID)
	if err != nil {
		t.Fatalf("Client() for a Ready runtime: %v", err)
	}
	if err := rc.List(ctx, &corev1.NamespaceList{}); err != nil {
		t.Fatalf("listing namespaces in the runtime: %v", err)
	}
	runtimeCfg := kubeconfigOf(t, kcp, ns, runtimeID)
	if runtimeCfg.Host == env.Config.Host {
		t.Fatal("the runtime kubeconfig points at the control plane, want its own apiserver")
	}
	createBtpOperator(t, rc)
	if n := sim.clusters.started.Load(); n != 1 {
		t.Errorf("started %d clusters, want 1", n)
	}

	if err := kcp.Delete(ctx, rt); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Runtime CR to be gone", func() (bool, error) {
		err := kcp.Get(ctx, key, &infrastructuremanager.Runtime{})
		return apierrors.IsNotFound(err), err
	})
	if _, err := cache.Client(ctx, runtimeID); !errors.Is(err, runtimeclient.ErrKubeconfigNotFound) {
		t.Errorf("after deletion: Client() error = %v, want ErrKubeconfigNotFound (Secret deleted)", err)
	}
	if err := reachable(runtimeCfg); err == nil {
		t.Error("the runtime apiserver still answers after the Runtime was deleted")
	}
	if sim.clusters.Owns(runtimeID) {
		t.Error("the simulator still owns a cluster for the deleted runtime")
	}
}

// createBtpOperator creates what keb's last step creates: the BtpOperator CR,
// which needs the CRD the simulator installs.
func createBtpOperator(t *testing.T, rc client.Client) {
	t.Helper()
	ctx := t.Context()
	if err := client.IgnoreAlreadyExists(rc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kyma-system"}})); err != nil {
		t.Fatalf("creating kyma-system in the runtime: %v", err)
	}
	btp := &unstructured.Unstructured{}
	btp.SetAPIVersion("operator.kyma-project.io/v1alpha1")
	btp.SetKind("BtpOperator")
	btp.SetNamespace("kyma-system")
	btp.SetName("btpoperator")
	if err := client.IgnoreAlreadyExists(rc.Create(ctx, btp)); err != nil {
		t.Fatalf("creating the BtpOperator CR in the runtime: %v", err)
	}
}

func TestSharedModeHandsEveryRuntimeTheSameCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	const ns = "infrasim-shared"
	createNamespace(t, kcp, ns)
	sim, stop := startSimulator(t, ns, Options{Mode: ModeShared})

	labelled := newRuntime(ns, "labelled", "rid-labelled")
	other := newRuntime(ns, "other", "rid-other")
	for _, rt := range []*infrastructuremanager.Runtime{labelled, other} {
		if err := kcp.Create(ctx, rt); err != nil {
			t.Fatal(err)
		}
	}
	waitForState(t, kcp, client.ObjectKeyFromObject(labelled), infrastructuremanager.StateReady)
	waitForState(t, kcp, client.ObjectKeyFromObject(other), infrastructuremanager.StateReady)
	cfgA := kubeconfigOf(t, kcp, ns, "rid-labelled")
	cfgB := kubeconfigOf(t, kcp, ns, "rid-other")
	if cfgA.Host != cfgB.Host {
		t.Fatalf("runtimes got apiservers %s and %s, want one shared", cfgA.Host, cfgB.Host)
	}
	if cfgA.Host == env.Config.Host {
		t.Fatal("the shared cluster is the control plane, want its own apiserver")
	}
	if n := sim.clusters.started.Load(); n != 1 {
		t.Fatalf("started %d clusters, want 1", n)
	}
	rcA, err := client.New(cfgA, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	createBtpOperator(t, rcA)

	// Deleting one runtime leaves the shared cluster to the other.
	if err := kcp.Delete(ctx, labelled); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the kubeconfig Secret of the deleted runtime to be gone", func() (bool, error) {
		err := kcp.Get(ctx, client.ObjectKey{Namespace: ns, Name: infrastructuremanager.KubeconfigSecretName("rid-labelled")}, &corev1.Secret{})
		return apierrors.IsNotFound(err), err
	})
	if err := reachable(cfgB); err != nil {
		t.Fatalf("the shared cluster stopped with one runtime still on it: %v", err)
	}

	// Stopping the simulator stops the shared cluster.
	stop()
	if err := reachable(cfgB); err == nil {
		t.Fatal("the shared apiserver still answers after the simulator stopped")
	}
}

func TestPermanentFaultMarksThemFailed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	const ns = "infrasim-fail"
	createNamespace(t, kcp, ns)
	faults, err := ParseFaults("permanent=sa-doomed")
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := startSimulator(t, ns, Options{Mode: ModeShared, Faults: faults})

	rt := newRuntime(ns, "doomed", "rid-doomed")
	if err := kcp.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	failed := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateFailed)
	const msg = "simulated Gardener error: quota exceeded for machine type Standard_D2s_v5 in region westeurope"
	if c := infrastructuremanager.Newest(failed.Status.Conditions); c.Message != msg || c.Reason != infrastructuremanager.ReasonGardenerError {
		t.Errorf("newest condition %+v, want %q", c, msg)
	}
	err = kcp.Get(ctx, client.ObjectKey{Namespace: ns, Name: infrastructuremanager.KubeconfigSecretName("rid-doomed")}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a Failed runtime has a kubeconfig Secret (get error: %v)", err)
	}
	if n := sim.clusters.started.Load(); n != 0 {
		t.Errorf("started %d clusters for a failing runtime, want 0", n)
	}

	// A Failed Runtime can still be deleted: keb cleans up after failures.
	if err := kcp.Delete(ctx, rt); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Failed Runtime CR to be gone", func() (bool, error) {
		err := kcp.Get(ctx, client.ObjectKeyFromObject(rt), &infrastructuremanager.Runtime{})
		return apierrors.IsNotFound(err), err
	})
}

// An unlabelled Runtime is refused, as the infrastructure manager refuses it.
func TestUnlabelledRuntimeIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	const ns = "infrasim-refused"
	createNamespace(t, kcp, ns)
	startSimulator(t, ns, Options{Mode: ModeShared})
	rt := newRuntime(ns, unique("unlabelled"), "")
	if err := kcp.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	failed := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateFailed)
	if c := infrastructuremanager.Newest(failed.Status.Conditions); c.Reason != infrastructuremanager.ReasonConfigurationError ||
		!strings.Contains(c.Message, "missing required label") {
		t.Errorf("refused with %+v", c)
	}
}

func TestParseFaults(t *testing.T) {
	t.Parallel()
	rt := func(subaccount string) *infrastructuremanager.Runtime {
		r := newRuntime("ns", "x", "rid")
		r.Labels[controlplane.LabelSubAccountID] = subaccount
		return r
	}
	f, err := ParseFaults("permanent=sa-broken, transient")
	if err != nil {
		t.Fatal(err)
	}
	if got := f(rt("sa-broken")); got == nil || !got.Permanent {
		t.Errorf("sa-broken: %+v, want permanent", got)
	}
	if got := f(rt("sa-other")); got == nil || got.Permanent {
		t.Errorf("sa-other: %+v, want transient", got)
	}
	if f, err := ParseFaults(""); f != nil || err != nil {
		t.Errorf("no faults: a function (%v), %v", f != nil, err)
	}
	if _, err := ParseFaults("sometimes"); err == nil || !strings.Contains(err.Error(), "transient or permanent") {
		t.Errorf("an unknown kind: %v", err)
	}
}

// After a restart the simulator owns no cluster: a Ready runtime gets a fresh
// one and a rewritten kubeconfig (see reconciler.Reconcile), once.
func TestRestartGivesReadyRuntimesAFreshCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	kcp := kcpClient(t)
	const ns = "infrasim-restart"
	createNamespace(t, kcp, ns)

	_, stopFirst := startSimulator(t, ns, Options{Mode: ModeShared})
	rt := newRuntime(ns, "survivor", "rid-survivor")
	if err := kcp.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
	before := kubeconfigOf(t, kcp, ns, "rid-survivor")
	stopFirst()

	second, _ := startSimulator(t, ns, Options{Mode: ModeShared})
	eventually(t, "the kubeconfig to point at a fresh, answering cluster", func() (bool, error) {
		after := kubeconfigOf(t, kcp, ns, "rid-survivor")
		if after.Host == before.Host {
			return false, errors.New("kubeconfig not rewritten yet")
		}
		return reachable(after) == nil, nil
	})
	survivor := waitForState(t, kcp, client.ObjectKeyFromObject(rt), infrastructuremanager.StateReady)
	if n := second.clusters.started.Load(); n != 1 {
		t.Errorf("the restarted simulator started %d clusters, want 1", n)
	}
	if survivor.Status.State != infrastructuremanager.StateReady {
		t.Errorf("state after restart = %q, want Ready", survivor.Status.State)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	binDir, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	coreOnly := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(coreOnly); err != nil {
		t.Fatal(err)
	}
	runtimeOnly := k8sruntime.NewScheme()
	if err := infrastructuremanager.AddToScheme(runtimeOnly); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		scheme  *k8sruntime.Scheme
		opts    Options
		wantErr string
	}{
		{name: "unknown mode", opts: Options{Mode: "cloud", BinDir: binDir}, wantErr: "unknown mode"},
		{name: "negative delay", opts: Options{Delay: -time.Second, BinDir: binDir}, wantErr: "negative delay"},
		{name: "negative start limit", opts: Options{MaxConcurrentStarts: -1, BinDir: binDir}, wantErr: "MaxConcurrentStarts"},
		{name: "no binaries in BinDir", opts: Options{BinDir: t.TempDir()}, wantErr: "kube-apiserver not found"},
		{name: "scheme without Runtime", scheme: coreOnly, opts: Options{BinDir: binDir}, wantErr: "does not know Runtime"},
		{name: "scheme without Secret", scheme: runtimeOnly, opts: Options{BinDir: binDir}, wantErr: "does not know core/v1 Secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(env.Config, tc.scheme, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRuntimeCRDsIsTheBtpOperatorCRD(t *testing.T) {
	t.Parallel()
	first, err := RuntimeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].Name != "btpoperators.operator.kyma-project.io" {
		t.Fatalf("RuntimeCRDs() = %v, want the BtpOperator CRD only", first)
	}
	second, err := RuntimeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if first[0] == second[0] {
		t.Fatal("RuntimeCRDs() returned the same object twice; installers mutate them")
	}
}
