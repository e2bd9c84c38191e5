package infrasim

import (
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// env is the control plane (KCP) the simulators in this package serve.
var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

func testScheme(t *testing.T) *k8sruntime.Scheme {
	return k8stest.Scheme(t, infrastructuremanager.AddToScheme)
}

func kcpClient(t *testing.T) client.Client { return env.Client(t, testScheme(t)) }

func createNamespace(t *testing.T, c client.Client, ns string) { k8stest.EnsureNamespace(t, c, ns) }

// testLog shows the simulator's log with `go test -v` only.
func testLog() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if testing.Verbose() {
		l.SetOutput(os.Stderr)
		l.SetLevel(logrus.DebugLevel)
	}
	return l
}

// startSimulator runs a simulator on namespace ns of the package's KCP until
// the returned stop (also run at cleanup), which waits for Start to return.
func startSimulator(t *testing.T, ns string, opts Options) (*Simulator, func()) {
	t.Helper()
	binDir, err := k8stest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	opts.Namespace, opts.BinDir, opts.Log = ns, binDir, testLog()
	sim, err := New(env.Config, nil, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("simulator stopped with: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return sim, stop
}

// newRuntime is a Runtime as keb writes it: every label the infrastructure
// manager requires (runtimeID "" leaves them all out) and every required
// field.
func newRuntime(ns, name, runtimeID string) *infrastructuremanager.Runtime {
	rt := &infrastructuremanager.Runtime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: infrastructuremanager.RuntimeSpec{
			Shoot: infrastructuremanager.RuntimeShoot{
				Name: "c-" + name, Purpose: "development", PlatformRegion: "cf-eu20", Region: "westeurope", SecretBindingName: "sb-azure",
				Provider: infrastructuremanager.Provider{Type: "azure", Workers: []infrastructuremanager.Worker{{
					Name: infrastructuremanager.KymaWorkerName, Machine: infrastructuremanager.Machine{Type: "Standard_D2s_v5"},
					Minimum: 3, Maximum: 20, Zones: []string{"1", "2", "3"}}}},
				Networking: infrastructuremanager.Networking{Nodes: "10.250.0.0/16", Pods: "10.96.0.0/13", Services: "10.104.0.0/13"},
			},
			Security: infrastructuremanager.Security{Administrators: []string{"admin@example.com"},
				Networking: infrastructuremanager.NetworkingSecurity{Filter: infrastructuremanager.Filter{
					Egress: infrastructuremanager.Egress{Enabled: true}}}},
		},
	}
	if runtimeID != "" {
		rt.Labels = map[string]string{
			controlplane.LabelRuntimeID: runtimeID, controlplane.LabelInstanceID: "inst-" + name,
			controlplane.LabelRegion: "westeurope", controlplane.LabelKymaName: name,
			controlplane.LabelPlanID: "4deee563-e5ec-4731-b9b1-53b42d855f0c", controlplane.LabelPlanName: "azure",
			controlplane.LabelGlobalAccountID: "ga-" + name, controlplane.LabelSubAccountID: "sa-" + name,
		}
	}
	return rt
}

// unique makes a Runtime's name unique to one run of a test, so that
// -count reruns against the package's control plane do not meet the
// Runtimes of earlier runs.
func unique(name string) string {
	return name + "-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:6]
}

// eventually polls cond until it holds or a minute passes (cluster starts take
// seconds on a busy machine).
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last error: %v)", what, lastErr)
}

// waitForState waits until the Runtime reports state and returns it.
func waitForState(t *testing.T, c client.Client, key client.ObjectKey, state infrastructuremanager.State) *infrastructuremanager.Runtime {
	t.Helper()
	rt := &infrastructuremanager.Runtime{}
	eventually(t, key.String()+" to be "+string(state), func() (bool, error) {
		err := c.Get(t.Context(), key, rt)
		return err == nil && rt.Status.State == state, err
	})
	return rt
}

// kubeconfigOf reads the runtime's kubeconfig Secret and returns its REST config.
func kubeconfigOf(t *testing.T, c client.Client, ns, runtimeID string) *rest.Config {
	t.Helper()
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: ns, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)}
	if err := c.Get(t.Context(), key, secret); err != nil {
		t.Fatalf("reading kubeconfig secret %s: %v", key, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[infrastructuremanager.KubeconfigKey])
	if err != nil {
		t.Fatalf("parsing kubeconfig from %s: %v", key, err)
	}
	return cfg
}

// reachable reports whether an apiserver answers at cfg within a few seconds.
func reachable(cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 5 * time.Second
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	return c.List(context.Background(), &corev1.NamespaceList{})
}
