package lmsim_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/lmsim"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the control plane, with keb's CRDs.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

// stack is a stand-in serving a namespace of its own (tests run in
// parallel, each with its options), a client of the control plane, and of
// one runtime (withRuntime), whose kubeconfig it publishes as infrasim does
// (labelled with the Kyma CR's name) once publish is called.
type stack struct {
	ns      string
	kcp, rt client.Client
	rtEnv   *k8stest.Environment
}

func newStack(t *testing.T, opts lmsim.Options) *stack {
	t.Helper()
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kcp, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := "lm-" + uuid.NewString()[:8]
	k8stest.EnsureNamespace(t, kcp, ns)
	opts.Namespace, opts.Resync = ns, 200*time.Millisecond
	sim, err := lmsim.New(env.Config, scheme, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = sim.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &stack{ns: ns, kcp: kcp}
}

// withRuntime starts a runtime API server without CRDs.
func (s *stack) withRuntime(t *testing.T) {
	t.Helper()
	rtEnv, err := k8stest.Start([]*apiextensionsv1.CustomResourceDefinition{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rtEnv.Stop() })
	scheme, _ := app.Scheme()
	if s.rt, err = client.New(rtEnv.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	s.rtEnv = rtEnv
}

// publish writes the runtime's kubeconfig Secret for k, as infrasim does.
func (s *stack) publish(t *testing.T, k *kyma.Kyma) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.rtEnv.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	id := k.Labels[controlplane.LabelRuntimeID]
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: infrastructuremanager.KubeconfigSecretName(id),
		Labels: map[string]string{controlplane.LabelRuntimeID: id, controlplane.LabelKymaName: k.Name}},
		Data: map[string][]byte{infrastructuremanager.KubeconfigKey: cfg}}
	if err := s.kcp.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
}

// newKyma creates a Kyma CR as keb does, with modules (nil: the defaults).
func (s *stack) newKyma(t *testing.T, modules *kyma.ModulesParam, domain string) *kyma.Kyma {
	t.Helper()
	id := uuid.NewString()
	k := kyma.NewKyma(kyma.KymaInput{RuntimeID: id, InstanceID: "i-" + id, PlanName: "azure", ShootName: "c-" + id[:7],
		Modules: modules}, kyma.Settings{ShootDomain: "kyma.example.com"})
	k.Namespace = s.ns
	if domain == "" {
		delete(k.Annotations, controlplane.AnnotationSKRDomain)
	}
	if err := kyma.Apply(t.Context(), s.kcp, k); err != nil {
		t.Fatal(err)
	}
	return k
}

// waitState waits until the Kyma CR reports state and returns it.
func (s *stack) waitState(t *testing.T, k *kyma.Kyma, state kyma.State) *kyma.Kyma {
	t.Helper()
	got := &kyma.Kyma{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := s.kcp.Get(t.Context(), client.ObjectKeyFromObject(k), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.State == state {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("Kyma %s still %q (%s), want %s; modules %+v", k.Name, got.Status.State, got.Status.Operation, state, got.Status.Modules)
	return nil
}

func moduleState(k *kyma.Kyma, name string) (kyma.State, string) {
	for _, m := range k.Status.Modules {
		if m.Name == name {
			return m.State, m.Message
		}
	}
	return "", ""
}

// TestBTPOperatorModuleFollowsBTPManager: the btp-operator module is
// installed once the runtime's kubeconfig is published (CRD and default CR
// in the runtime), Warning while keb's Secret is missing (BTP Manager's
// MissingSecret), Ready once it is there; the Kyma CR follows. Deleting the
// Kyma CR removes the default CR and the finalizer.
func TestBTPOperatorModuleFollowsBTPManager(t *testing.T) {
	t.Parallel()
	s := newStack(t, lmsim.Options{})
	s.withRuntime(t)
	k := s.newKyma(t, nil, "kyma.example.com")
	got := s.waitState(t, k, kyma.StateProcessing)
	if !strings.Contains(got.Status.Operation, "kubeconfig") || len(got.Finalizers) != 1 {
		t.Errorf("before the kubeconfig: operation %q, finalizers %v", got.Status.Operation, got.Finalizers)
	}
	s.publish(t, k)
	got = s.waitState(t, k, kyma.StateWarning)
	if st, _ := moduleState(got, "btp-operator"); st != kyma.StateWarning {
		t.Errorf("btp-operator module %s, want Warning (no Secret yet)", st)
	}
	if st, _ := moduleState(got, "istio"); st != kyma.StateReady {
		t.Errorf("istio module %s, want Ready", st)
	}
	cr := &btpmanager.BtpOperator{}
	if err := s.rt.Get(t.Context(), client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}, cr); err != nil {
		t.Fatalf("the module's default CR: %v", err)
	}
	if cr.Status.State != btpmanager.StateWarning {
		t.Errorf("BtpOperator CR %s, want Warning", cr.Status.State)
	}
	if err := btpmanager.Inject(t.Context(), s.rt, btpmanager.Credentials{ClientID: "a", ClientSecret: "b", SMURL: "c", TokenURL: "d"}, "cluster"); err != nil {
		t.Fatal(err)
	}
	got = s.waitState(t, k, kyma.StateReady)
	if len(got.Status.Modules) != 3 || got.Status.ActiveChannel != "regular" {
		t.Errorf("status %+v", got.Status)
	}

	if err := s.kcp.Delete(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.kcp.Get(t.Context(), client.ObjectKeyFromObject(k), &kyma.Kyma{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Kyma CR still there: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.rt.Get(t.Context(), client.ObjectKeyFromObject(cr), cr); !apierrors.IsNotFound(err) {
		t.Errorf("the default CR after the Kyma CR's deletion: %v, want NotFound", err)
	}
}

// TestIgnorePolicyCreatesNoDefaultCR: with customResourcePolicy Ignore the
// module's operator is installed (the CRD) but no default CR is created.
func TestIgnorePolicyCreatesNoDefaultCR(t *testing.T) {
	t.Parallel()
	s := newStack(t, lmsim.Options{})
	s.withRuntime(t)
	k := s.newKyma(t, &kyma.ModulesParam{List: []kyma.Module{{Name: "btp-operator", CustomResourcePolicy: "Ignore"}}}, "kyma.example.com")
	s.publish(t, k)
	s.waitState(t, k, kyma.StateReady)
	list := &btpmanager.BtpOperatorList{}
	if err := s.rt.List(t.Context(), list); err != nil {
		t.Fatalf("the CRD is not installed: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d BtpOperator CRs, want none", len(list.Items))
	}
}

// TestErrors: what Lifecycle Manager puts a Kyma CR in Error for, with the
// module's message; a runtime's kubeconfig is not needed to find them.
func TestErrors(t *testing.T) {
	t.Parallel()
	s := newStack(t, lmsim.Options{})
	cases := []struct {
		name    string
		modules *kyma.ModulesParam
		domain  string
		module  string
		message string
	}{
		{name: "unknown module", domain: "kyma.example.com", module: "no-such-module", message: `module template for module "no-such-module" not found`,
			modules: &kyma.ModulesParam{List: []kyma.Module{{Name: "istio"}, {Name: "no-such-module"}}}},
		{name: "channel the module is not released in", domain: "kyma.example.com", module: "connectivity-proxy",
			message: `no versions found for channel "fast"`,
			modules: &kyma.ModulesParam{List: []kyma.Module{{Name: "connectivity-proxy", Channel: "fast"}}}},
		{name: "no skr-domain annotation (the watcher needs it)", modules: &kyma.ModulesParam{Default: new(bool)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := s.newKyma(t, tc.modules, tc.domain)
			got := s.waitState(t, k, kyma.StateError)
			if tc.module == "" {
				if !strings.Contains(got.Status.Operation, "skr-domain") {
					t.Errorf("lastOperation %q does not name skr-domain", got.Status.Operation)
				}
				return
			}
			st, msg := moduleState(got, tc.module)
			if st != kyma.StateError || !strings.Contains(msg, tc.message) {
				t.Errorf("module %s: %s %q, want Error %q", tc.module, st, msg, tc.message)
			}
		})
	}
}

// TestNoWatcherAcceptsAKymaWithoutDomain: with the watcher off the
// annotation is not needed.
func TestNoWatcherAcceptsAKymaWithoutDomain(t *testing.T) {
	t.Parallel()
	s := newStack(t, lmsim.Options{NoWatcher: true})
	k := s.newKyma(t, &kyma.ModulesParam{Default: new(bool)}, "")
	s.waitState(t, k, kyma.StateReady)
}
