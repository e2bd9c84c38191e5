package btpmanager_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kyma-keb/keb/internal/btpmanager"
	standin "github.com/kyma-keb/keb/internal/btpmanagersim"
	"github.com/kyma-keb/keb/testing/k8stest"
)

var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

var (
	creds     = btpmanager.Credentials{ClientID: "client-1", ClientSecret: "secret-1", SMURL: "https://sm.example", TokenURL: "https://token.example"}
	kebLabels = map[string]string{
		"app.kubernetes.io/managed-by": "kcp-kyma-environment-broker",
		"app.kubernetes.io/watched-by": "kcp-kyma-environment-broker",
	}
)

const clusterID = "9d5a7b66-8f0e-4c3e-9d5b-7d7b0f0f2a11"

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := btpmanager.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// setup returns a client for the shared apiserver, emptied of what Inject writes. The tests that
// use it run one after another, not in parallel: Inject writes fixed names (kyma-system/
// sap-btp-manager, kyma-system/btpoperator) and the stand-in judges the whole cluster. The
// namespace itself stays: envtest has no namespace controller to finish deleting it.
func setup(t *testing.T) client.Client {
	t.Helper()
	ctx := t.Context()
	c, err := client.New(env.Config, client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kyma-system", Name: "sap-btp-manager"}}
	if err := c.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	var crs btpmanager.BtpOperatorList
	if err := c.List(ctx, &crs); err != nil {
		t.Fatal(err)
	}
	for i := range crs.Items {
		if err := c.Delete(ctx, &crs.Items[i]); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	return c
}

func getSecret(t *testing.T, c client.Client) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "kyma-system", Name: "sap-btp-manager"}, &s); err != nil {
		t.Fatalf("reading the Secret: %v", err)
	}
	return &s
}

func wantData(c btpmanager.Credentials, id string) map[string]string {
	return map[string]string{"clientid": c.ClientID, "clientsecret": c.ClientSecret, "sm_url": c.SMURL, "tokenurl": c.TokenURL, "cluster_id": id}
}

func checkData(t *testing.T, s *corev1.Secret, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for k, v := range s.Data {
		got[k] = string(v)
	}
	if !maps.Equal(got, want) {
		t.Errorf("Secret data = %v, want exactly %v", got, want)
	}
}

func TestInjectOnEmptyClusterThenBTPManagerIsReady(t *testing.T) {
	c := setup(t)
	ctx := t.Context()
	if err := btpmanager.Inject(ctx, c, creds, clusterID); err != nil {
		t.Fatalf("Inject: %v", err)
	}

	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: "kyma-system"}, &ns); err != nil {
		t.Errorf("namespace kyma-system: %v", err)
	}
	s := getSecret(t, c)
	if s.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret type = %q, want Opaque", s.Type)
	}
	for k, v := range kebLabels {
		if s.Labels[k] != v {
			t.Errorf("Secret label %s = %q, want %q", k, s.Labels[k], v)
		}
	}
	checkData(t, s, wantData(creds, clusterID))
	keys := slices.Sorted(maps.Keys(s.Data))
	if !slices.Equal(keys, []string{"clientid", "clientsecret", "cluster_id", "sm_url", "tokenurl"}) {
		t.Errorf("Secret keys = %v", keys)
	}
	var cr btpmanager.BtpOperator
	key := client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}
	if err := c.Get(ctx, key, &cr); !apierrors.IsNotFound(err) {
		t.Fatalf("BtpOperator after Inject: %v, want NotFound (the CR is CreateBtpOperator's)", err)
	}
	if err := btpmanager.CreateBtpOperator(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &cr); err != nil {
		t.Fatalf("BtpOperator kyma-system/btpoperator: %v", err)
	}

	if err := standin.Reconcile(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cr), &cr); err != nil {
		t.Fatal(err)
	}
	cond, _ := cr.Status.Condition(btpmanager.ConditionReady)
	if cr.Status.State != btpmanager.StateReady || cond.Status != "True" || cond.Reason != btpmanager.ReasonReconcileSucceeded {
		t.Errorf("BTP Manager stand-in reports %s %+v, want Ready", cr.Status.State, cond)
	}
}

func TestInjectTwiceWritesNothing(t *testing.T) {
	c := setup(t)
	ctx := t.Context()
	if err := injectAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	secretRV := getSecret(t, c).ResourceVersion
	var cr btpmanager.BtpOperator
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}, &cr); err != nil {
		t.Fatal(err)
	}
	if err := injectAll(ctx, c); err != nil {
		t.Fatalf("second Inject: %v", err)
	}
	if rv := getSecret(t, c).ResourceVersion; rv != secretRV {
		t.Errorf("Secret resourceVersion %s -> %s: the second Inject wrote it", secretRV, rv)
	}
	var again btpmanager.BtpOperator
	if err := c.Get(ctx, client.ObjectKeyFromObject(&cr), &again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != cr.ResourceVersion || again.UID != cr.UID {
		t.Errorf("BtpOperator changed: %s/%s -> %s/%s", cr.UID, cr.ResourceVersion, again.UID, again.ResourceVersion)
	}
}

func TestCredentialChangesKeepClusterID(t *testing.T) {
	c := setup(t)
	ctx := t.Context()
	if err := btpmanager.Inject(ctx, c, creds, clusterID); err != nil {
		t.Fatal(err)
	}
	rv := getSecret(t, c).ResourceVersion

	second := btpmanager.Credentials{ClientID: "client-2", ClientSecret: "secret-2", SMURL: "https://sm2.example", TokenURL: "https://token2.example"}
	if err := btpmanager.Inject(ctx, c, second, clusterID); err != nil {
		t.Fatal(err)
	}
	s := getSecret(t, c)
	checkData(t, s, wantData(second, clusterID))
	if s.ResourceVersion == rv {
		t.Error("Inject with new credentials did not update the Secret")
	}

	rotated := btpmanager.Credentials{ClientID: "client-3", ClientSecret: "secret-3", SMURL: "https://sm3.example", TokenURL: "https://token3.example"}
	if err := btpmanager.UpdateCredentials(ctx, c, rotated); err != nil {
		t.Fatalf("UpdateCredentials: %v", err)
	}
	checkData(t, getSecret(t, c), wantData(rotated, clusterID))
	rv = getSecret(t, c).ResourceVersion
	if err := btpmanager.UpdateCredentials(ctx, c, rotated); err != nil {
		t.Fatal(err)
	}
	if getSecret(t, c).ResourceVersion != rv {
		t.Error("UpdateCredentials with unchanged credentials wrote the Secret")
	}
}

// TestInjectRepairsForeignSecret: a Secret someone else wrote (no labels, an extra key, a stale
// value) is brought to the contract, keeping other labels.
func TestInjectRepairsForeignSecret(t *testing.T) {
	c := setup(t)
	ctx := t.Context()
	ensureKymaSystem(t, c)
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kyma-system", Name: "sap-btp-manager", Labels: map[string]string{"team": "x"}},
		StringData: map[string]string{"clientid": "old", "extra": "1"},
	}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	if err := btpmanager.Inject(ctx, c, creds, clusterID); err != nil {
		t.Fatal(err)
	}
	s := getSecret(t, c)
	checkData(t, s, wantData(creds, clusterID))
	if s.Labels["team"] != "x" || s.Labels["app.kubernetes.io/managed-by"] != "kcp-kyma-environment-broker" || s.Labels["app.kubernetes.io/watched-by"] != "kcp-kyma-environment-broker" {
		t.Errorf("labels = %v", s.Labels)
	}
}

func TestSkipReconciliationSecretIsLeftAlone(t *testing.T) {
	c := setup(t)
	ctx := t.Context()
	ensureKymaSystem(t, c)
	own := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kyma-system", Name: "sap-btp-manager",
			Labels: map[string]string{"kyma-project.io/skip-reconciliation": "true"}},
		StringData: map[string]string{"clientid": "mine", "cluster_id": "theirs"},
	}
	if err := c.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	before := getSecret(t, c)

	if err := injectAll(ctx, c); err != nil {
		t.Fatalf("Inject: %v", err)
	}
	if err := btpmanager.UpdateCredentials(ctx, c, creds); err != nil {
		t.Fatalf("UpdateCredentials: %v", err)
	}
	after := getSecret(t, c)
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("Secret written: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}
	checkData(t, after, map[string]string{"clientid": "mine", "cluster_id": "theirs"})
	var cr btpmanager.BtpOperator
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}, &cr); err != nil {
		t.Errorf("the CR is created all the same: %v", err)
	}
}

func TestIncompleteInputWritesNothing(t *testing.T) {
	c := setup(t)
	ctx := t.Context()
	cases := []struct {
		name      string
		creds     btpmanager.Credentials
		clusterID string
		wantKeys  string
	}{
		{name: "empty clientsecret", creds: btpmanager.Credentials{ClientID: "a", SMURL: "b", TokenURL: "c"}, clusterID: clusterID, wantKeys: "clientsecret"},
		{name: "empty cluster ID", creds: creds, wantKeys: "cluster_id"},
		{name: "nothing", wantKeys: "clientid, clientsecret, sm_url, tokenurl, cluster_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := btpmanager.Inject(ctx, c, tc.creds, tc.clusterID)
			if !errors.Is(err, btpmanager.ErrIncompleteCredentials) || !strings.HasSuffix(err.Error(), tc.wantKeys) {
				t.Errorf("err = %v, want ErrIncompleteCredentials naming %s", err, tc.wantKeys)
			}
		})
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: "kyma-system", Name: "sap-btp-manager"}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Secret after rejected input: %v, want NotFound", err)
	}
	if err := btpmanager.UpdateCredentials(ctx, c, btpmanager.Credentials{}); !errors.Is(err, btpmanager.ErrIncompleteCredentials) {
		t.Errorf("UpdateCredentials(empty) = %v", err)
	}
	if err := btpmanager.UpdateCredentials(ctx, c, creds); !apierrors.IsNotFound(err) {
		t.Errorf("UpdateCredentials without a Secret = %v, want NotFound", err)
	}
}

func TestUpdateCredentialsNeedsClusterID(t *testing.T) {
	c := setup(t)
	ctx := t.Context()
	ensureKymaSystem(t, c)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kyma-system", Name: "sap-btp-manager"}, StringData: map[string]string{"clientid": "x"}}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := btpmanager.UpdateCredentials(ctx, c, creds); err == nil || !strings.Contains(err.Error(), "cluster_id") {
		t.Errorf("err = %v, want one naming cluster_id", err)
	}
}

// injectAll is what the last provisioning step does for a runtime with the btp-operator module:
// the Secret, then the CR.
func injectAll(ctx context.Context, c client.Client) error {
	if err := btpmanager.Inject(ctx, c, creds, clusterID); err != nil {
		return err
	}
	return btpmanager.CreateBtpOperator(ctx, c)
}

func ensureKymaSystem(t *testing.T, c client.Client) {
	t.Helper()
	err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kyma-system"}})
	if client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

// TestInjectUntilTheCRDIsServed walks a runtime with the btp-operator module through what happens
// before Lifecycle Manager installs BTP Manager: no operator.kyma-project.io group at all, then the group with another
// version (the Kyma CRD), then the BtpOperator CRD. One client is used throughout, as the cached
// runtime client would be: its discovery must notice the CRD once it arrives.
func TestInjectUntilTheCRDIsServed(t *testing.T) {
	t.Parallel() // its own apiserver
	e, err := k8stest.Start([]*apiextensionsv1.CustomResourceDefinition{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	all, err := k8stest.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	crd := func(name string) *apiextensionsv1.CustomResourceDefinition {
		for _, c := range all {
			if c.Name == name {
				return c.DeepCopy()
			}
		}
		t.Fatalf("no CRD %s", name)
		return nil
	}
	c, err := client.New(e.Config, client.Options{}) // default scheme: Inject needs no registration
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	// The Secret goes in whatever the runtime serves: BTP Manager finds it as soon as it starts.
	if err := btpmanager.Inject(ctx, c, creds, clusterID); err != nil {
		t.Fatalf("Inject on a runtime without the BtpOperator kind: %v", err)
	}
	checkData(t, getSecret(t, c), wantData(creds, clusterID))
	err = btpmanager.CreateBtpOperator(ctx, c)
	if !errors.Is(err, btpmanager.ErrBtpOperatorNotServed) || !strings.Contains(err.Error(), "btpoperators.operator.kyma-project.io") {
		t.Fatalf("no group: err = %v, want ErrBtpOperatorNotServed naming the CRD", err)
	}

	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd("kymas.operator.kyma-project.io")}}); err != nil {
		t.Fatal(err)
	}
	if err := btpmanager.CreateBtpOperator(ctx, c); !errors.Is(err, btpmanager.ErrBtpOperatorNotServed) {
		t.Fatalf("group without v1alpha1: err = %v, want ErrBtpOperatorNotServed", err)
	}

	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd("btpoperators.operator.kyma-project.io")}}); err != nil {
		t.Fatal(err)
	}
	if err := btpmanager.CreateBtpOperator(ctx, c); err != nil {
		t.Fatalf("CRD served: CreateBtpOperator = %v", err)
	}
	var cr btpmanager.BtpOperator
	typed, err := client.New(e.Config, client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := typed.Get(ctx, client.ObjectKey{Namespace: "kyma-system", Name: "btpoperator"}, &cr); err != nil {
		t.Errorf("BtpOperator after the CRD arrived: %v", err)
	}
}

// TestInjectErrors reaches the failure branches through the fake client: each is returned with
// context, and a 404 for the resource (stale discovery) still counts as "not served".
func TestInjectErrors(t *testing.T) {
	t.Parallel() // the fake client shares nothing
	boom := errors.New("boom")
	failCreate := func(kind string, err error) interceptor.Funcs {
		return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			gvk, _ := c.GroupVersionKindFor(obj)
			if gvk.Kind == kind {
				return err
			}
			return c.Create(ctx, obj, opts...)
		}}
	}
	cases := []struct {
		name      string
		funcs     interceptor.Funcs
		wantErr   string
		notServed bool
		wrapped   error
	}{
		{name: "namespace", funcs: failCreate("Namespace", boom), wantErr: "creating namespace kyma-system", wrapped: boom},
		{name: "read Secret", wrapped: boom, wantErr: "reading Secret kyma-system/sap-btp-manager", funcs: interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return boom
			},
		}},
		{name: "create Secret", funcs: failCreate("Secret", boom), wantErr: "creating Secret kyma-system/sap-btp-manager", wrapped: boom},
		{name: "create CR", funcs: failCreate("BtpOperator", boom), wantErr: "creating BtpOperator kyma-system/btpoperator", wrapped: boom},
		{name: "CR resource not found", notServed: true, wantErr: "creating BtpOperator",
			funcs: failCreate("BtpOperator", apierrors.NewNotFound(schema.GroupResource{Group: "operator.kyma-project.io", Resource: "btpoperators"}, "btpoperator"))},
		{name: "namespace not found is not 'not served'", wantErr: "creating BtpOperator",
			funcs: failCreate("BtpOperator", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "kyma-system"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithInterceptorFuncs(tc.funcs).Build()
			err := injectAll(t.Context(), c)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if tc.wrapped != nil && !errors.Is(err, tc.wrapped) {
				t.Errorf("err = %v does not wrap %v", err, tc.wrapped)
			}
			if got := errors.Is(err, btpmanager.ErrBtpOperatorNotServed); got != tc.notServed {
				t.Errorf("errors.Is(err, ErrBtpOperatorNotServed) = %v, want %v", got, tc.notServed)
			}
		})
	}
}

func TestCredentialsNeverPrintTheSecret(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"%v", "%+v", "%s", "%#v"} {
		if out := fmt.Sprintf(format, creds); strings.Contains(out, creds.ClientSecret) {
			t.Errorf("%s prints the client secret: %s", format, out)
		}
	}
}
