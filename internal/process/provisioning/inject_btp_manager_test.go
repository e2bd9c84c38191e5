package provisioning_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/testing/k8stest"
)

func smCredentials(t *testing.T) []byte {
	t.Helper()
	return []byte(processtest.MustJSON(t, catalog.SMOperatorCredentials{ClientID: "cid", ClientSecret: "csecret",
		SMURL: "https://sm.example.com", URL: "https://auth.example.com", XSAppName: "app"}))
}

func TestInjectBTPManagerWithoutRuntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		credentials []byte
		clientErr   error
		want        processtest.Outcome
		wantDesc    []string
		wantCalls   int32
	}{
		{name: "no credentials: skipped, said so", want: processtest.Done,
			wantDesc: []string{"Skipped", "sm_operator_credentials"}, wantCalls: 0},
		{name: "unreadable stored credentials: fails for good", credentials: []byte("{not json"), want: processtest.Failure, wantCalls: 0},
		// Before, the provisioning retried incomplete credentials until its deadline while the
		// update step failed at once; both read them through btpmanager.StoredCredentials now.
		{name: "incomplete stored credentials: fails for good, naming the empty key",
			credentials: []byte(`{"clientid":"id","clientsecret":"","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`),
			want:        processtest.Failure, wantCalls: 0},
		{name: "runtime kubeconfig missing: waits for it",
			clientErr: fmt.Errorf("secret kcp-system/kubeconfig-x: %w", runtimeclient.ErrKubeconfigNotFound),
			want:      processtest.Retry, wantDesc: []string{"kubeconfig"}, wantCalls: 1},
		{name: "runtime unreachable: temporary error", clientErr: errors.New("dial tcp: connection refused"),
			want: processtest.Temporary, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure"})
			op.Instance.Credentials = tc.credentials
			if tc.credentials == nil && tc.want != processtest.Done {
				op.Instance.Credentials = smCredentials(t)
			}
			rc := &processtest.RuntimeClients{Err: tc.clientErr}
			cfg := testConfig("unused")
			step := &provisioning.InjectBTPManager{Runtimes: rc, Config: cfg}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, step.Name(), tc.want, res, err)
			if tc.want == processtest.Retry {
				if res.RetryAfter != cfg.BTPManagerPoll {
					t.Errorf("retry after %s, want %s", res.RetryAfter, cfg.BTPManagerPoll)
				}
				if m := processtest.MissingFrom(op.Description, op.Instance.ShootName); m != "" {
					t.Errorf("description %q does not name the cluster", op.Description)
				}
			}
			if m := processtest.MissingFrom(op.Description, tc.wantDesc...); m != "" {
				t.Errorf("description %q does not mention %q", op.Description, m)
			}
			if tc.want == processtest.Failure && strings.Contains(res.Failure.Error(), "not json") {
				t.Errorf("failure %q echoes the stored credentials", res.Failure)
			}
			if tc.want == processtest.Failure && strings.Contains(tc.name, "incomplete") &&
				!strings.Contains(res.Failure.Error(), "empty clientsecret") {
				t.Errorf("failure %q does not name the empty key", res.Failure)
			}
			if got := rc.Calls(); got != tc.wantCalls {
				t.Errorf("runtime client asked %d times, want %d", got, tc.wantCalls)
			}
			if tc.wantCalls > 0 && rc.Asked() != op.Instance.RuntimeID {
				t.Errorf("runtime client asked for %v, want %s", rc.Asked(), op.Instance.RuntimeID)
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
	noBTPOperator := `{"name":"x","modules":{"list":[{"name":"istio"}]}}`
	tests := []struct {
		name     string
		params   string
		runtime  client.Client
		want     processtest.Outcome
		wantDesc []string
		wantCR   bool
	}{
		{name: "btp-operator module, runtime without the BtpOperator CRD: waits, naming it", runtime: bareClient,
			want: processtest.Retry, wantDesc: []string{"btp-operator", "btpoperators.operator.kyma-project.io"}},
		// The package's apiserver has keb's CRDs; only this case uses its kyma-system namespace.
		{name: "btp-operator module, runtime serving BtpOperator: Secret and CR written", runtime: kcpClient(t),
			want: processtest.Done, wantCR: true},
		// No module installs the BtpOperator CRD: keb does not wait for it, nor create the CR.
		{name: "modules without btp-operator: the Secret only, at once", params: noBTPOperator, runtime: bareClient,
			want: processtest.Done},
		{name: "no modules at all: the Secret only", params: `{"name":"x","modules":{"default":false}}`, runtime: bareClient,
			want: processtest.Done},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The bare runtime's kyma-system is shared by its cases: they run one after another.
			if tc.runtime != bareClient {
				t.Parallel()
			}
			op := initializedOp(t, catalog.AzurePlanID, tc.params, process.Record{Provider: "azure"})
			op.Instance.Credentials = smCredentials(t)
			cfg := testConfig("unused")
			step := &provisioning.InjectBTPManager{Runtimes: &processtest.RuntimeClients{Runtime: tc.runtime}, Config: cfg}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, step.Name(), tc.want, res, err)
			if tc.want == processtest.Retry && res.RetryAfter != cfg.BTPManagerPoll {
				t.Errorf("retry after %s, want %s", res.RetryAfter, cfg.BTPManagerPoll)
			}
			if m := processtest.MissingFrom(op.Description, tc.wantDesc...); m != "" {
				t.Errorf("description %q does not mention %q", op.Description, m)
			}
			// Either way the Secret is in place, so BTP Manager finds it as soon as it starts.
			sec := &corev1.Secret{}
			key := client.ObjectKey{Namespace: "kyma-system", Name: "sap-btp-manager"}
			if err := tc.runtime.Get(t.Context(), key, sec); err != nil {
				t.Fatalf("reading %s: %v", key, err)
			}
			want := map[string]string{"clientid": "cid", "clientsecret": "csecret", "sm_url": "https://sm.example.com",
				"tokenurl": "https://auth.example.com", "cluster_id": op.Instance.ClusterID}
			got := map[string]string{}
			for k, v := range sec.Data {
				got[k] = string(v)
			}
			if g, w := processtest.MustJSON(t, got), processtest.MustJSON(t, want); g != w {
				t.Errorf("secret data:\n got %s\nwant %s", g, w)
			}
			if sec.Type != corev1.SecretTypeOpaque ||
				sec.Labels["app.kubernetes.io/managed-by"] != "kcp-kyma-environment-broker" ||
				sec.Labels["app.kubernetes.io/watched-by"] != "kcp-kyma-environment-broker" {
				t.Errorf("secret type %q labels %v, want Opaque managed and watched by kcp-kyma-environment-broker", sec.Type, sec.Labels)
			}
			if !tc.wantCR && tc.want == processtest.Done {
				// The bare runtime serves no BtpOperator kind: no CR can be in it, and none was asked for.
				if _, err := bare.Kubectl(t, nil, "get", "btpoperators", "-A"); err == nil {
					t.Error("the runtime serves btpoperators: the test's premise is gone")
				}
			}
			if tc.wantCR {
				cr := &unstructured.Unstructured{}
				cr.SetGroupVersionKind(btpmanager.GroupVersion.WithKind("BtpOperator"))
				if err := tc.runtime.Get(t.Context(), client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}, cr); err != nil {
					t.Errorf("reading BtpOperator kyma-system/btpoperator: %v", err)
				}
				// A re-run (after a crash) writes nothing new and is done again.
				again := *op
				res, err := step.Run(t.Context(), &again)
				processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
			}
		})
	}
}
