package provisioning_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/runtime"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// runtimeClients is a fake of the runtime client cache.
type runtimeClients struct {
	c     client.Client
	err   error
	calls atomic.Int32
	asked atomic.Value // the runtime ID asked for
}

func (r *runtimeClients) Client(_ context.Context, runtimeID string) (client.Client, error) {
	r.calls.Add(1)
	r.asked.Store(runtimeID)
	return r.c, r.err
}

func smCredentials(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(catalog.SMOperatorCredentials{ClientID: "cid", ClientSecret: "csecret",
		SMURL: "https://sm.example.com", URL: "https://auth.example.com", XSAppName: "app"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInjectBTPManagerWithoutRuntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		credentials []byte
		clientErr   error
		want        outcome
		wantDesc    []string
		wantCalls   int32
	}{
		{name: "no credentials: skipped, said so", want: done,
			wantDesc: []string{"Skipped", "sm_operator_credentials"}, wantCalls: 0},
		{name: "unreadable stored credentials: fails for good", credentials: []byte("{not json"), want: failure, wantCalls: 0},
		{name: "runtime kubeconfig missing: waits for it",
			clientErr: fmt.Errorf("secret kcp-system/kubeconfig-x: %w", runtime.ErrKubeconfigNotFound),
			want:      retry, wantDesc: []string{"kubeconfig"}, wantCalls: 1},
		{name: "runtime unreachable: temporary error", clientErr: errors.New("dial tcp: connection refused"),
			want: temporary, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := initializedOp(t, catalog.AzurePlanID, "", process.Data{Provider: "azure"})
			op.Instance.Credentials = tc.credentials
			if tc.credentials == nil && tc.want != done {
				op.Instance.Credentials = smCredentials(t)
			}
			rc := &runtimeClients{err: tc.clientErr}
			cfg := testConfig("unused")
			step := &provisioning.InjectBTPManager{Runtimes: rc, Config: cfg}
			res, err := step.Run(context.Background(), op)
			if got := outcomeOf(res, err); got != tc.want {
				t.Fatalf("outcome %s (result %+v, error %v), want %s", got, res, err, tc.want)
			}
			if tc.want == retry {
				if res.RetryAfter != cfg.BTPManagerPoll {
					t.Errorf("retry after %s, want %s", res.RetryAfter, cfg.BTPManagerPoll)
				}
				if m := missingFrom(op.Description, op.Data.ShootName); m != "" {
					t.Errorf("description %q does not name the cluster", op.Description)
				}
			}
			if m := missingFrom(op.Description, tc.wantDesc...); m != "" {
				t.Errorf("description %q does not mention %q", op.Description, m)
			}
			if tc.want == failure && strings.Contains(res.Failure.Error(), "not json") {
				t.Errorf("failure %q echoes the stored credentials", res.Failure)
			}
			if got := rc.calls.Load(); got != tc.wantCalls {
				t.Errorf("runtime client asked %d times, want %d", got, tc.wantCalls)
			}
			if tc.wantCalls > 0 && rc.asked.Load() != op.Data.RuntimeID {
				t.Errorf("runtime client asked for %v, want %s", rc.asked.Load(), op.Data.RuntimeID)
			}
		})
	}
}

func TestInjectBTPManagerIntoRuntime(t *testing.T) {
	t.Parallel()
	// A runtime where Lifecycle Manager has not installed the btp-operator module yet: no CRDs.
	bare, err := k8stest.Start([]*apiextensionsv1.CustomResourceDefinition{})
	if err != nil {
		t.Fatalf("starting a runtime apiserver without CRDs: %v", err)
	}
	t.Cleanup(func() {
		if err := bare.Stop(); err != nil {
			t.Errorf("stopping the bare apiserver: %v", err)
		}
	})
	s, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	bareClient, err := client.New(bare.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		runtime  client.Client
		want     outcome
		wantDesc []string
		wantCR   bool
	}{
		{name: "runtime without the BtpOperator CRD: waits, naming it", runtime: bareClient, want: retry,
			wantDesc: []string{"btpoperators.operator.kyma-project.io"}},
		// The package's apiserver has keb's CRDs; only this case uses its kyma-system namespace.
		{name: "runtime serving BtpOperator: Secret and CR written", runtime: kcpClient(t), want: done, wantCR: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := initializedOp(t, catalog.AzurePlanID, "", process.Data{Provider: "azure"})
			op.Instance.Credentials = smCredentials(t)
			cfg := testConfig("unused")
			step := &provisioning.InjectBTPManager{Runtimes: &runtimeClients{c: tc.runtime}, Config: cfg}
			res, err := step.Run(context.Background(), op)
			if got := outcomeOf(res, err); got != tc.want {
				t.Fatalf("outcome %s (result %+v, error %v), want %s", got, res, err, tc.want)
			}
			if tc.want == retry && res.RetryAfter != cfg.BTPManagerPoll {
				t.Errorf("retry after %s, want %s", res.RetryAfter, cfg.BTPManagerPoll)
			}
			if m := missingFrom(op.Description, tc.wantDesc...); m != "" {
				t.Errorf("description %q does not mention %q", op.Description, m)
			}
			// Either way the Secret is in place, so BTP Manager finds it as soon as it starts.
			sec := &corev1.Secret{}
			key := client.ObjectKey{Namespace: "kyma-system", Name: "sap-btp-manager"}
			if err := tc.runtime.Get(context.Background(), key, sec); err != nil {
				t.Fatalf("reading %s: %v", key, err)
			}
			want := map[string]string{"clientid": "cid", "clientsecret": "csecret", "sm_url": "https://sm.example.com",
				"tokenurl": "https://auth.example.com", "cluster_id": op.Data.ClusterID}
			got := map[string]string{}
			for k, v := range sec.Data {
				got[k] = string(v)
			}
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Errorf("secret data:\n got %s\nwant %s", g, w)
			}
			if sec.Type != corev1.SecretTypeOpaque ||
				sec.Labels["app.kubernetes.io/managed-by"] != "kcp-kyma-environment-broker" ||
				sec.Labels["app.kubernetes.io/watched-by"] != "kcp-kyma-environment-broker" {
				t.Errorf("secret type %q labels %v, want Opaque managed and watched by kcp-kyma-environment-broker", sec.Type, sec.Labels)
			}
			if tc.wantCR {
				cr := &unstructured.Unstructured{}
				cr.SetGroupVersionKind(btpmanager.GroupVersion.WithKind("BtpOperator"))
				if err := tc.runtime.Get(context.Background(), client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}, cr); err != nil {
					t.Errorf("reading BtpOperator kyma-system/btpoperator: %v", err)
				}
				// A re-run (after a crash) writes nothing new and is done again.
				again := *op
				res, err := step.Run(context.Background(), &again)
				mustDone(t, "re-run", res, err)
			}
		})
	}
}
