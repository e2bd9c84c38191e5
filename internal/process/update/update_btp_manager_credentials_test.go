package update_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/update"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/testing/k8stest"
)

var secretKey = client.ObjectKey{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}

func TestUpdateBTPManagerCredentialsWithoutRuntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		noCreds     bool
		rawCreds    string // replaces the stored credentials
		noRuntimeID bool
		clientErr   error
		want        processtest.Outcome
		wantDesc    []string
		wantCalls   int32
	}{
		{name: "no credentials stored: done, nothing to push", noCreds: true, want: processtest.Done,
			wantDesc: []string{"Nothing to push", "sm_operator_credentials"}},
		{name: "unreadable stored credentials: fails for good", rawCreds: `{"clientsecret":"s3cret"`, want: processtest.Failure},
		{name: "instance without a runtime ID: fails at once instead of waiting for a kubeconfig", noRuntimeID: true,
			want: processtest.Failure},
		{name: "runtime kubeconfig missing: waits for it",
			clientErr: fmt.Errorf("secret kcp-system/kubeconfig-x: %w", runtimeclient.ErrKubeconfigNotFound),
			want:      processtest.Retry, wantDesc: []string{"kubeconfig"}, wantCalls: 1},
		{name: "runtime unreachable: temporary error", clientErr: errors.New("dial tcp: connection refused"),
			want: processtest.Temporary, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			creds := &credentials
			if tc.noCreds {
				creds = nil
			}
			op := newOp(t, creds)
			if tc.rawCreds != "" {
				op.Instance.Credentials = []byte(tc.rawCreds)
			}
			if tc.noRuntimeID {
				op.Instance.RuntimeID = ""
			}
			rc := &processtest.RuntimeClients{Err: tc.clientErr}
			cfg := testConfig()
			step := &update.UpdateBTPManagerCredentials{Runtimes: rc, Config: cfg}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, step.Name(), tc.want, res, err)
			if tc.want == processtest.Retry {
				if res.RetryAfter != cfg.BTPManagerPoll {
					t.Errorf("retry after %s, want the configured poll %s", res.RetryAfter, cfg.BTPManagerPoll)
				}
				if m := processtest.MissingFrom(op.Description, op.Instance.ShootName); m != "" {
					t.Errorf("description %q does not name the cluster", op.Description)
				}
			}
			if m := processtest.MissingFrom(op.Description, tc.wantDesc...); m != "" {
				t.Errorf("description %q does not mention %q", op.Description, m)
			}
			if tc.want == processtest.Failure && strings.Contains(res.Failure.Error(), "s3cret") {
				t.Errorf("failure %q echoes the stored credentials", res.Failure)
			}
			if got := rc.Calls(); got != tc.wantCalls {
				t.Errorf("runtime client asked %d times, want %d", got, tc.wantCalls)
			}
			if tc.wantCalls > 0 && rc.Asked() != op.Instance.RuntimeID {
				t.Errorf("runtime client asked for %v, want the instance's runtime %s", rc.Asked(), op.Instance.RuntimeID)
			}
		})
	}
}

// resetRuntime removes the sap-btp-manager Secret and the BtpOperator CR from the package's
// apiserver acting as a runtime, and makes sure kyma-system exists (the apiserver runs no
// namespace controller, so the namespace is never deleted).
func resetRuntime(t *testing.T) {
	t.Helper()
	c := kcpClient(t)
	ctx := t.Context()
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: btpmanager.Namespace}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", btpmanager.Namespace, err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name}}
	if err := c.Delete(ctx, sec); client.IgnoreNotFound(err) != nil {
		t.Fatalf("deleting Secret %s: %v", secretKey, err)
	}
	if err := c.Delete(ctx, btpOperator()); client.IgnoreNotFound(err) != nil {
		t.Fatalf("deleting BtpOperator: %v", err)
	}
}

func btpOperator() *unstructured.Unstructured {
	cr := &unstructured.Unstructured{}
	cr.SetGroupVersionKind(btpmanager.GroupVersion.WithKind(btpmanager.Kind))
	cr.SetNamespace(btpmanager.Namespace)
	cr.SetName(btpmanager.CRName)
	return cr
}

// putSecret stores the runtime's sap-btp-manager Secret as an earlier injection (or an operator)
// left it.
func putSecret(t *testing.T, labels map[string]string, data map[string]string) *corev1.Secret {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretKey.Namespace, Name: secretKey.Name, Labels: labels},
		Type: corev1.SecretTypeOpaque, StringData: data}
	if err := kcpClient(t).Create(t.Context(), sec); err != nil {
		t.Fatalf("creating Secret %s: %v", secretKey, err)
	}
	return readSecret(t, kcpClient(t))
}

func readSecret(t *testing.T, c client.Client) *corev1.Secret {
	t.Helper()
	sec := &corev1.Secret{}
	if err := c.Get(t.Context(), secretKey, sec); err != nil {
		t.Fatalf("reading Secret %s: %v", secretKey, err)
	}
	return sec
}

func secretMissing(t *testing.T) bool {
	t.Helper()
	err := kcpClient(t).Get(t.Context(), secretKey, &corev1.Secret{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading Secret %s: %v", secretKey, err)
	}
	return apierrors.IsNotFound(err)
}

func stringData(sec *corev1.Secret) map[string]string {
	out := map[string]string{}
	for k, v := range sec.Data {
		out[k] = string(v)
	}
	return out
}

// wantData is the Secret's data holding creds and clusterID.
func wantData(creds catalog.SMOperatorCredentials, clusterID string) map[string]string {
	return map[string]string{btpmanager.KeyClientID: creds.ClientID, btpmanager.KeyClientSecret: creds.ClientSecret,
		btpmanager.KeySMURL: creds.SMURL, btpmanager.KeyTokenURL: creds.URL, btpmanager.KeyClusterID: clusterID}
}

var (
	kebLabels = map[string]string{btpmanager.LabelManagedBy: btpmanager.ManagedByKEB, btpmanager.LabelWatchedBy: btpmanager.ManagedByKEB}
	oldCreds  = catalog.SMOperatorCredentials{ClientID: "old-cid", ClientSecret: "old-csecret",
		SMURL: "https://sm.old.example.com", URL: "https://auth.old.example.com"}
)

// TestUpdateBTPManagerCredentialsInRuntime runs the step against a real runtime apiserver (the
// package's). Its cases share the fixed Secret kyma-system/sap-btp-manager, so they run in turn.
func TestUpdateBTPManagerCredentialsInRuntime(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	runtimeClient := kcpClient(t)
	newStep := func() (*update.UpdateBTPManagerCredentials, *processtest.RuntimeClients) {
		rc := &processtest.RuntimeClients{Runtime: runtimeClient}
		return &update.UpdateBTPManagerCredentials{Runtimes: rc, Config: cfg}, rc
	}

	t.Run("credentials rotated, the Secret's cluster_id kept", func(t *testing.T) {
		resetRuntime(t)
		// The Secret's cluster_id differs from the instance's on purpose: BTP Manager knows the
		// cluster by the one in the Secret, and rotation must not change it.
		before := putSecret(t, kebLabels, wantData(oldCreds, "cluster-of-the-secret"))
		op := newOp(t, &credentials)
		step, rc := newStep()
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, step.Name(), processtest.Done, res, err)
		if rc.Asked() != op.Instance.RuntimeID {
			t.Errorf("runtime client asked for %v, want %s", rc.Asked(), op.Instance.RuntimeID)
		}
		sec := readSecret(t, runtimeClient)
		if g, w := processtest.MustJSON(t, stringData(sec)), processtest.MustJSON(t, wantData(credentials, "cluster-of-the-secret")); g != w {
			t.Errorf("secret data:\n got %s\nwant %s", g, w)
		}
		if sec.UID != before.UID {
			t.Error("the Secret was recreated, want it updated in place")
		}
		if op.Record.ClusterID != "" {
			t.Errorf("operation records cluster ID %q although nothing was injected", op.Record.ClusterID)
		}
		if m := processtest.MissingFrom(op.Description, "credentials", "updated"); m != "" {
			t.Errorf("description %q does not mention %q", op.Description, m)
		}
		// A re-run (after a crash) writes nothing.
		res, err = step.Run(t.Context(), op)
		processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
		if again := readSecret(t, runtimeClient); again.ResourceVersion != sec.ResourceVersion {
			t.Errorf("re-run rewrote the Secret (resourceVersion %s → %s)", sec.ResourceVersion, again.ResourceVersion)
		}
	})

	t.Run("skip-reconciliation Secret left untouched, said so", func(t *testing.T) {
		resetRuntime(t)
		labels := map[string]string{btpmanager.LabelSkipReconciliation: "true"}
		before := putSecret(t, labels, wantData(oldCreds, "cluster-of-the-secret"))
		op := newOp(t, &credentials)
		step, _ := newStep()
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, step.Name(), processtest.Done, res, err)
		sec := readSecret(t, runtimeClient)
		if sec.ResourceVersion != before.ResourceVersion {
			t.Errorf("the taken-over Secret was written (resourceVersion %s → %s)", before.ResourceVersion, sec.ResourceVersion)
		}
		if g, w := processtest.MustJSON(t, stringData(sec)), processtest.MustJSON(t, wantData(oldCreds, "cluster-of-the-secret")); g != w {
			t.Errorf("secret data:\n got %s\nwant %s", g, w)
		}
		if m := processtest.MissingFrom(op.Description, btpmanager.LabelSkipReconciliation); m != "" {
			t.Errorf("description %q does not say the Secret is labelled %s", op.Description, m)
		}
	})

	t.Run("missing Secret injected with the instance's cluster ID, BtpOperator created", func(t *testing.T) {
		resetRuntime(t)
		op := newOp(t, &credentials)
		step, _ := newStep()
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, step.Name(), processtest.Done, res, err)
		sec := readSecret(t, runtimeClient)
		if g, w := processtest.MustJSON(t, stringData(sec)), processtest.MustJSON(t, wantData(credentials, op.Instance.ClusterID)); g != w {
			t.Errorf("secret data:\n got %s\nwant %s", g, w)
		}
		if sec.Labels[btpmanager.LabelManagedBy] != btpmanager.ManagedByKEB || sec.Labels[btpmanager.LabelWatchedBy] != btpmanager.ManagedByKEB {
			t.Errorf("secret labels %v, want managed and watched by %s", sec.Labels, btpmanager.ManagedByKEB)
		}
		if err := runtimeClient.Get(t.Context(), client.ObjectKeyFromObject(btpOperator()), btpOperator()); err != nil {
			t.Errorf("reading BtpOperator %s/%s: %v", btpmanager.Namespace, btpmanager.CRName, err)
		}
		if op.Record.ClusterID != op.Instance.ClusterID {
			t.Errorf("operation records cluster ID %q, want the injected %q", op.Record.ClusterID, op.Instance.ClusterID)
		}
		if m := processtest.MissingFrom(op.Description, "missing", btpmanager.SecretName); m != "" {
			t.Errorf("description %q does not mention %q", op.Description, m)
		}
		res, err = step.Run(t.Context(), op)
		processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
		if again := readSecret(t, runtimeClient); again.ResourceVersion != sec.ResourceVersion {
			t.Errorf("re-run rewrote the Secret (resourceVersion %s → %s)", sec.ResourceVersion, again.ResourceVersion)
		}
	})

	t.Run("missing Secret and no cluster ID recorded: fails, nothing written", func(t *testing.T) {
		resetRuntime(t)
		op := newOp(t, &credentials)
		op.Instance.ClusterID = ""
		step, _ := newStep()
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, step.Name(), processtest.Failure, res, err)
		if !secretMissing(t) {
			t.Error("a Secret was written without a cluster ID")
		}
	})

	t.Run("incomplete stored credentials: fails for good naming the empty key, Secret untouched", func(t *testing.T) {
		resetRuntime(t)
		before := putSecret(t, kebLabels, wantData(oldCreds, "cluster-of-the-secret"))
		incomplete := credentials
		incomplete.ClientSecret = ""
		op := newOp(t, &incomplete)
		step, _ := newStep()
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, step.Name(), processtest.Failure, res, err)
		if !strings.Contains(res.Failure.Error(), btpmanager.KeyClientSecret) || strings.Contains(res.Failure.Error(), credentials.ClientID) {
			t.Errorf("failure %q should name the empty key and no value", res.Failure)
		}
		if sec := readSecret(t, runtimeClient); sec.ResourceVersion != before.ResourceVersion {
			t.Error("the Secret was written with incomplete credentials")
		}
	})

	t.Run("NotFound for another object: temporary error, nothing injected", func(t *testing.T) {
		resetRuntime(t)
		s, err := app.Scheme()
		if err != nil {
			t.Fatal(err)
		}
		base, err := client.NewWithWatch(env.Config, client.Options{Scheme: s})
		if err != nil {
			t.Fatal(err)
		}
		// A 404 that is not about the Secret (here: its namespace) must not be taken for a
		// runtime that never got one.
		c := interceptor.NewClient(base, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Secret); ok && key == secretKey {
					return apierrors.NewNotFound(corev1.Resource("namespaces"), btpmanager.Namespace)
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		op := newOp(t, &credentials)
		step := &update.UpdateBTPManagerCredentials{Runtimes: &processtest.RuntimeClients{Runtime: c}, Config: cfg}
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, step.Name(), processtest.Temporary, res, err)
		if !secretMissing(t) {
			t.Error("a Secret was injected on a NotFound that was not about it")
		}
		if op.Record.ClusterID != "" {
			t.Errorf("operation records cluster ID %q although nothing was injected", op.Record.ClusterID)
		}
	})

	t.Run("through the runtime client cache: waits for the kubeconfig, then rotates", func(t *testing.T) {
		resetRuntime(t)
		putSecret(t, kebLabels, wantData(oldCreds, "cluster-of-the-secret"))
		s, err := app.Scheme()
		if err != nil {
			t.Fatal(err)
		}
		cache := runtimeclient.NewCache(runtimeClient, controlplane.Namespace, s, runtimeclient.Bounds{})
		pipe := update.Pipeline(update.Deps{Config: cfg, Runtimes: cache})
		step := pipe.Steps[0]
		op := newOp(t, &credentials)
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, "before the kubeconfig exists", processtest.Retry, res, err)
		if res.RetryAfter != cfg.BTPManagerPoll {
			t.Errorf("retry after %s, want the configured poll %s", res.RetryAfter, cfg.BTPManagerPoll)
		}
		if m := processtest.MissingFrom(op.Description, "kubeconfig", op.Instance.ShootName); m != "" {
			t.Errorf("description %q does not mention %q", op.Description, m)
		}
		// The infrastructure manager publishes the kubeconfig; here it points at the package's apiserver.
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := env.WriteKubeconfig(path); err != nil {
			t.Fatal(err)
		}
		kc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		err = runtimeClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controlplane.Namespace}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := runtimeClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: infrastructuremanager.KubeconfigSecretName(op.Instance.RuntimeID)},
			Data:       map[string][]byte{infrastructuremanager.KubeconfigKey: kc},
		}); err != nil {
			t.Fatalf("creating kubeconfig Secret: %v", err)
		}
		res, err = step.Run(ctx, op)
		processtest.MustOutcome(t, "once the kubeconfig exists", processtest.Done, res, err)
		if g, w := processtest.MustJSON(t, stringData(readSecret(t, runtimeClient))), processtest.MustJSON(t, wantData(credentials, "cluster-of-the-secret")); g != w {
			t.Errorf("secret data:\n got %s\nwant %s", g, w)
		}
	})
}

// TestUpdateBTPManagerCredentialsBtpOperatorNotServed: a runtime without the sap-btp-manager
// Secret whose apiserver does not serve BtpOperator yet gets the Secret at once and the CR as
// soon as the kind is served, on a later run of the same operation.
func TestUpdateBTPManagerCredentialsBtpOperatorNotServed(t *testing.T) {
	t.Parallel()
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
	c, err := client.New(bare.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	op := newOp(t, &credentials)
	cfg := testConfig()
	step := &update.UpdateBTPManagerCredentials{Runtimes: &processtest.RuntimeClients{Runtime: c}, Config: cfg}
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "without the CRD", processtest.Retry, res, err)
	if res.RetryAfter != cfg.BTPManagerPoll {
		t.Errorf("retry after %s, want the configured poll %s", res.RetryAfter, cfg.BTPManagerPoll)
	}
	if m := processtest.MissingFrom(op.Description, "btpoperators.operator.kyma-project.io"); m != "" {
		t.Errorf("description %q does not name the CRD", op.Description)
	}
	if g, w := processtest.MustJSON(t, stringData(readSecret(t, c))), processtest.MustJSON(t, wantData(credentials, op.Instance.ClusterID)); g != w {
		t.Errorf("secret data while waiting:\n got %s\nwant %s", g, w)
	}

	// Lifecycle Manager installs the btp-operator module's CRD.
	crds, err := k8stest.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var btp []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds {
		if crd.Name == btpmanager.Resource+"."+btpmanager.GroupVersion.Group {
			btp = append(btp, crd)
		}
	}
	if len(btp) != 1 {
		t.Fatalf("found %d BtpOperator CRDs in keb's resources, want 1", len(btp))
	}
	if _, err := envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{CRDs: btp}); err != nil {
		t.Fatalf("installing the BtpOperator CRD: %v", err)
	}
	// The Secret exists now; the operation remembers it injected it, so it goes on injecting
	// (creating the CR) rather than only rotating.
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "once the CRD is served", processtest.Done, res, err)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(btpOperator()), btpOperator()); err != nil {
		t.Errorf("reading BtpOperator %s/%s: %v", btpmanager.Namespace, btpmanager.CRName, err)
	}
}
