package provisioning_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// createRuntimeCR creates the operation's Runtime CR in ns with the given status, as the
// infrastructure manager would report it.
func createRuntimeCR(t *testing.T, ns string, op *process.Operation, state infrastructuremanager.State, message string) {
	t.Helper()
	c := kcpClient(t)
	rt := runtimetest.Runtime(ns, op.Instance.RuntimeID)
	if err := c.Create(t.Context(), rt); err != nil {
		t.Fatalf("creating Runtime CR: %v", err)
	}
	if state == "" {
		return
	}
	reason := infrastructuremanager.ReasonProcessing
	if state == infrastructuremanager.StateFailed {
		reason = infrastructuremanager.ReasonGardenerError
	}
	runtimetest.SetStatus(t, c, rt, state, reason, message)
}

// createKubeconfigSecret writes the runtime's kubeconfig Secret as the
// infrastructure manager does: labelled with the runtime ID (contracts.md),
// which is how the control-plane watch selects it.
func createKubeconfigSecret(t *testing.T, ns, runtimeID string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: infrastructuremanager.KubeconfigSecretName(runtimeID),
			Labels: map[string]string{controlplane.LabelRuntimeID: runtimeID}},
		Data: map[string][]byte{infrastructuremanager.KubeconfigKey: []byte("apiVersion: v1\nkind: Config\n")},
	}
	if err := kcpClient(t).Create(t.Context(), s); err != nil {
		t.Fatalf("creating kubeconfig Secret: %v", err)
	}
}

// createKymaCR writes the runtime's Kyma CR as keb's apply_kyma step does.
func createKymaCR(t *testing.T, ns string, op *process.Operation) *kyma.Kyma {
	t.Helper()
	k := kyma.NewKyma(kyma.KymaInput{RuntimeID: op.Instance.RuntimeID, InstanceID: op.InstanceID}, kyma.Settings{ShootDomain: "example.com"})
	k.Namespace = ns
	if err := kcpClient(t).Create(t.Context(), k); err != nil {
		t.Fatalf("creating Kyma CR: %v", err)
	}
	return k
}

func TestCheckRuntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		noCR       bool
		state      infrastructuremanager.State
		message    string
		kubeconfig bool
		want       processtest.Outcome
		// wantText must all be in the description (retry) or in the failure (failure).
		wantText []string
	}{
		{name: "not yet picked up: waits", want: processtest.Retry, wantText: []string{"Waiting"}},
		{name: "Pending: waits, naming the state", state: infrastructuremanager.StatePending, want: processtest.Retry,
			wantText: []string{"Pending"}},
		{name: "Pending with a message: waits, showing it", state: infrastructuremanager.StatePending, message: "creating control plane",
			want: processtest.Retry, wantText: []string{"Pending", "creating control plane"}},
		{name: "Failed: waits (the infrastructure manager may recover), showing the newest condition", state: infrastructuremanager.StateFailed,
			message: "quota exceeded for Standard_D4s_v5 in westeurope", want: processtest.Retry,
			wantText: []string{"Failed", "GardenerErr", "quota exceeded for Standard_D4s_v5 in westeurope"}},
		{name: "Ready without kubeconfig Secret: waits for the kubeconfig", state: infrastructuremanager.StateReady, want: processtest.Retry,
			wantText: []string{"kubeconfig"}},
		{name: "Ready with kubeconfig Secret: done", state: infrastructuremanager.StateReady, kubeconfig: true, want: processtest.Done},
		{name: "kubeconfig Secret before Ready: still waits", state: infrastructuremanager.StatePending, kubeconfig: true, want: processtest.Retry,
			wantText: []string{"Pending"}},
		{name: "Runtime CR missing: fails for good", noCR: true, want: processtest.Failure, wantText: []string{"Runtime CR"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			op := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure"})
			if !tc.noCR {
				createRuntimeCR(t, ns, op, tc.state, tc.message)
			}
			if tc.kubeconfig {
				createKubeconfigSecret(t, ns, op.Instance.RuntimeID)
			}
			cfg := testConfig(ns)
			step := &provisioning.CheckRuntime{KCP: kcpClient(t), Config: cfg}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, step.Name(), tc.want, res, err)
			switch tc.want {
			case processtest.Retry:
				if res.RetryAfter != cfg.RuntimePoll {
					t.Errorf("retry after %s, want the runtime poll %s", res.RetryAfter, cfg.RuntimePoll)
				}
				want := append([]string{op.Instance.ShootName}, tc.wantText...)
				if m := processtest.MissingFrom(op.Description, want...); m != "" {
					t.Errorf("description %q does not mention %q", op.Description, m)
				}
			case processtest.Failure:
				want := append([]string{op.Instance.RuntimeID}, tc.wantText...)
				if m := processtest.MissingFrom(res.Failure.Error(), want...); m != "" {
					t.Errorf("failure %q does not mention %q", res.Failure, m)
				}
			}
		})
	}
}

func TestTimedStepsUseTheirConfiguredTimeouts(t *testing.T) {
	t.Parallel()
	cfg := testConfig("unused")
	tests := []struct {
		name string
		step process.TimedStep
		want time.Duration
	}{
		{name: "resolve_hyperscaler_secret waits for an account", step: &provisioning.ResolveHyperscalerSecret{Config: cfg}, want: cfg.AccountTimeout},
		{name: "check_runtime waits for the cluster", step: &provisioning.CheckRuntime{Config: cfg}, want: cfg.RuntimeTimeout},
		{name: "inject_btp_manager waits for the BtpOperator kind", step: &provisioning.InjectBTPManager{Config: cfg}, want: cfg.BTPManagerTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.step.Timeout(); got != tc.want {
				t.Errorf("timeout %s, want %s", got, tc.want)
			}
		})
	}
}

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	reads atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.reads.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// noWakes is the watcher's store when no operation waits: nothing to wake.
type noWakes struct{}

func (noWakes) WakeRuntime(context.Context, string) (int64, time.Time, error) {
	return 0, time.Time{}, storage.ErrNotFound
}

func (noWakes) Wake(context.Context, int64) (time.Time, error) { return time.Time{}, nil }

// TestCheckRuntimeTrustsTheWatchOnlyForReady runs check_runtime with a real
// control-plane watch: the run a wake-up starts finds the Ready Runtime CR and
// the kubeconfig Secret in the watch and reads nothing from the API server;
// a Runtime CR the watch shows short of Ready is read from the API server,
// which may be ahead of it.
func TestCheckRuntimeTrustsTheWatchOnlyForReady(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	watcher := process.NewWatcher(env.Config, scheme, ns, noWakes{}, noWakes{}, logrus.New())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); watcher.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	ready := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure"})
	createRuntimeCR(t, ns, ready, infrastructuremanager.StateReady, "")
	createKubeconfigSecret(t, ns, ready.Instance.RuntimeID)
	pending := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure"})
	createRuntimeCR(t, ns, pending, infrastructuremanager.StatePending, "")

	seen := func(op *process.Operation, state infrastructuremanager.State) bool {
		rt := &infrastructuremanager.Runtime{}
		return watcher.Seen(t.Context(), client.ObjectKey{Namespace: ns, Name: strings.ToLower(op.Instance.RuntimeID)}, rt) &&
			rt.Status.State == state
	}
	deadline := time.Now().Add(time.Minute)
	for !seen(ready, infrastructuremanager.StateReady) || !seen(pending, infrastructuremanager.StatePending) {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not show the Runtime CRs within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if watcher.Seen(t.Context(), client.ObjectKey{Namespace: ns, Name: "anything"}, &corev1.ConfigMap{}) {
		t.Error("the watch claims to have seen a ConfigMap, which it does not watch")
	}

	api := &countingReader{Reader: kcpClient(t)}
	step := &provisioning.CheckRuntime{KCP: api, Watch: watcher, Config: testConfig(ns)}
	res, err := step.Run(t.Context(), ready)
	processtest.MustOutcome(t, step.Name(), processtest.Done, res, err)
	if n := api.reads.Load(); n != 0 {
		t.Errorf("a Ready runtime the watch has seen cost %d API server reads, want 0", n)
	}

	// The infrastructure manager reports Ready; the watch may not have seen
	// it yet, the API server has.
	rt := &infrastructuremanager.Runtime{}
	if err := kcpClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: strings.ToLower(pending.Instance.RuntimeID)}, rt); err != nil {
		t.Fatal(err)
	}
	rt.Status.State = infrastructuremanager.StateReady
	if err := kcpClient(t).Status().Update(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	stale := &staleWatch{Watcher: watcher}
	step = &provisioning.CheckRuntime{KCP: api, Watch: stale, Config: testConfig(ns)}
	res, err = step.Run(t.Context(), pending)
	processtest.MustOutcome(t, step.Name(), processtest.Retry, res, err)
	if m := processtest.MissingFrom(pending.Description, "kubeconfig"); m != "" {
		t.Errorf("description %q: want the wait for the kubeconfig (the API server's Ready), not the watch's Pending", pending.Description)
	}
	if n := api.reads.Load(); n != 2 {
		t.Errorf("%d API server reads, want 2: the Runtime CR the watch showed Pending, the Secret it has not seen", n)
	}
}

// staleWatch shows Runtime CRs as Pending, as a watch behind the API server does.
type staleWatch struct{ *process.Watcher }

func (w *staleWatch) Seen(ctx context.Context, key client.ObjectKey, obj client.Object) bool {
	if !w.Watcher.Seen(ctx, key, obj) {
		return false
	}
	if rt, ok := obj.(*infrastructuremanager.Runtime); ok {
		rt.Status.State = infrastructuremanager.StatePending
	}
	return true
}
