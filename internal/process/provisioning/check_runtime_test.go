package provisioning_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// createRuntimeCR creates the operation's Runtime CR in ns with the given status, as the
// infrastructure manager would report it.
func createRuntimeCR(t *testing.T, ns string, op *process.Operation, state infrastructuremanager.State, message string) {
	t.Helper()
	c := kcpClient(t)
	rt := &infrastructuremanager.Runtime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ToLower(op.Record.RuntimeID),
			Labels: map[string]string{controlplane.LabelRuntimeID: op.Record.RuntimeID}},
		Spec: infrastructuremanager.RuntimeSpec{Shoot: infrastructuremanager.RuntimeShoot{Name: op.Record.ShootName, Region: "eastus",
			Provider: infrastructuremanager.RuntimeProvider{Type: "azure"}}},
	}
	if err := c.Create(t.Context(), rt); err != nil {
		t.Fatalf("creating Runtime CR: %v", err)
	}
	if state == "" && message == "" {
		return
	}
	rt.Status = infrastructuremanager.RuntimeStatus{State: state, Message: message}
	if err := c.Status().Update(t.Context(), rt); err != nil {
		t.Fatalf("setting Runtime status %s: %v", state, err)
	}
}

func createKubeconfigSecret(t *testing.T, ns, runtimeID string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)},
		Data:       map[string][]byte{infrastructuremanager.KubeconfigKey: []byte("apiVersion: v1\nkind: Config\n")},
	}
	if err := kcpClient(t).Create(t.Context(), s); err != nil {
		t.Fatalf("creating kubeconfig Secret: %v", err)
	}
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
		{name: "Failed: fails with the infrastructure's message", state: infrastructuremanager.StateFailed,
			message: "quota exceeded for Standard_D4s_v5 in westeurope", want: processtest.Failure,
			wantText: []string{"quota exceeded for Standard_D4s_v5 in westeurope"}},
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
				createKubeconfigSecret(t, ns, op.Record.RuntimeID)
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
				want := append([]string{op.Record.ShootName}, tc.wantText...)
				if m := processtest.MissingFrom(op.Description, want...); m != "" {
					t.Errorf("description %q does not mention %q", op.Description, m)
				}
			case processtest.Failure:
				want := append([]string{op.Record.RuntimeID}, tc.wantText...)
				if tc.state == infrastructuremanager.StateFailed {
					want = tc.wantText
				}
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
