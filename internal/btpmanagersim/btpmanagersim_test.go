package btpmanagersim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/testing/k8stest"
)

var env *k8stest.Environment

func TestMain(m *testing.M) { k8stest.Main(m, &env) }

// The tests below run one after another, not in parallel: BTP Manager's rules are cluster-wide
// (the oldest CR of the cluster, the Secret in kyma-system), so each test needs the cluster to
// itself. setup empties it.
func setup(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := btpmanager.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	err = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: btpmanager.Namespace}})
	if client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}}
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

func createCR(t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	cr := &btpmanager.BtpOperator{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := c.Create(t.Context(), cr); err != nil {
		t.Fatalf("creating BtpOperator %s/%s: %v", namespace, name, err)
	}
}

func createSecret(t *testing.T, c client.Client, labels map[string]string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName, Labels: labels},
		StringData: data,
	}
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatalf("creating Secret: %v", err)
	}
}

func getStatus(t *testing.T, c client.Client, namespace, name string) (string, metav1.Condition) {
	t.Helper()
	var cr btpmanager.BtpOperator
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, &cr); err != nil {
		t.Fatal(err)
	}
	cond, _ := cr.Status.Condition(btpmanager.ConditionReady)
	return cr.Status.State, cond
}

var kebLabels = map[string]string{btpmanager.LabelManagedBy: btpmanager.ManagedByKEB, btpmanager.LabelWatchedBy: btpmanager.ManagedByKEB}

func fullData() map[string]string {
	return map[string]string{"clientid": "id", "clientsecret": "secret", "sm_url": "https://sm", "tokenurl": "https://token", "cluster_id": "c-1"}
}

func TestSecretVerdicts(t *testing.T) {
	cases := []struct {
		name        string
		secret      bool
		labels      map[string]string
		data        func(map[string]string)
		wantState   string
		wantReason  string
		wantStatus  metav1.ConditionStatus
		wantMessage []string
	}{
		{name: "no Secret", wantState: "Warning", wantReason: "MissingSecret", wantStatus: metav1.ConditionFalse},
		{name: "Secret without KEB label", secret: true, labels: map[string]string{"app": "x"},
			wantState: "Warning", wantReason: "MissingSecret", wantStatus: metav1.ConditionFalse},
		{name: "empty clientsecret", secret: true, labels: kebLabels, data: func(d map[string]string) { d["clientsecret"] = "" },
			wantState: "Error", wantReason: "InvalidSecret", wantStatus: metav1.ConditionFalse, wantMessage: []string{"clientsecret"}},
		{name: "missing cluster_id and tokenurl", secret: true, labels: kebLabels,
			data:      func(d map[string]string) { delete(d, "cluster_id"); delete(d, "tokenurl") },
			wantState: "Error", wantReason: "InvalidSecret", wantStatus: metav1.ConditionFalse, wantMessage: []string{"tokenurl, cluster_id"}},
		{name: "complete Secret", secret: true, labels: kebLabels,
			wantState: "Ready", wantReason: "ReconcileSucceeded", wantStatus: metav1.ConditionTrue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := setup(t)
			createCR(t, c, btpmanager.Namespace, "btpoperator")
			if tc.secret {
				d := fullData()
				if tc.data != nil {
					tc.data(d)
				}
				createSecret(t, c, tc.labels, d)
			}
			if err := Reconcile(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			state, cond := getStatus(t, c, btpmanager.Namespace, "btpoperator")
			if state != tc.wantState || cond.Reason != tc.wantReason || cond.Status != tc.wantStatus || cond.Type != "Ready" {
				t.Errorf("status = %s %+v, want %s with Ready=%s/%s", state, cond, tc.wantState, tc.wantStatus, tc.wantReason)
			}
			for _, m := range tc.wantMessage {
				if !strings.Contains(cond.Message, m) {
					t.Errorf("message %q does not name %q", cond.Message, m)
				}
			}
		})
	}
}

// TestNewerCRGetsOlderCRExists creates the newer CR with a name that sorts first, so only the
// creation time can make the other one the oldest.
func TestNewerCRGetsOlderCRExists(t *testing.T) {
	c := setup(t)
	createSecret(t, c, kebLabels, fullData())
	createCR(t, c, btpmanager.Namespace, "btpoperator")
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	createCR(t, c, "default", "a-newer")
	if err := Reconcile(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if state, cond := getStatus(t, c, btpmanager.Namespace, "btpoperator"); state != "Ready" || cond.Reason != "ReconcileSucceeded" {
		t.Errorf("oldest CR: %s %+v, want Ready", state, cond)
	}
	state, cond := getStatus(t, c, "default", "a-newer")
	if state != "Error" || cond.Reason != "OlderCRExists" || !strings.Contains(cond.Message, "kyma-system/btpoperator") {
		t.Errorf("newer CR: %s %+v, want Error/OlderCRExists naming kyma-system/btpoperator", state, cond)
	}
}

// TestReconcileWritesOnlyChanges: a second pass over an unchanged cluster must not touch the CR,
// or every pass would wake up whoever watches it.
func TestReconcileWritesOnlyChanges(t *testing.T) {
	c := setup(t)
	createCR(t, c, btpmanager.Namespace, "btpoperator")
	ctx := t.Context()
	if err := Reconcile(ctx, c); err != nil {
		t.Fatal(err)
	}
	var before, after btpmanager.BtpOperator
	key := client.ObjectKey{Namespace: btpmanager.Namespace, Name: "btpoperator"}
	if err := c.Get(ctx, key, &before); err != nil {
		t.Fatal(err)
	}
	if err := Reconcile(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &after); err != nil {
		t.Fatal(err)
	}
	if before.ResourceVersion != after.ResourceVersion {
		t.Errorf("resourceVersion %s -> %s on an unchanged cluster", before.ResourceVersion, after.ResourceVersion)
	}
}

func TestReconcileWithoutCRs(t *testing.T) {
	c := setup(t)
	if err := Reconcile(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// TestRun follows the Secret: missing first, then complete, and stops when the context ends.
func TestRun(t *testing.T) {
	c := setup(t)
	createCR(t, c, btpmanager.Namespace, "btpoperator")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, c, 50*time.Millisecond); close(done) }()
	defer func() {
		cancel()
		<-done
	}()

	waitFor := func(state string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _ := getStatus(t, c, btpmanager.Namespace, "btpoperator")
			if got == state {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("state %q, want %q", got, state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("Warning")
	createSecret(t, c, kebLabels, fullData())
	waitFor("Ready")

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the context ended")
	}
}

// TestReconcileErrors reaches the error branches through the fake client: each failure is
// returned with what was being done.
func TestReconcileErrors(t *testing.T) {
	t.Parallel() // the fake client shares nothing with the other tests
	boom := errors.New("boom")
	cases := []struct {
		name    string
		funcs   interceptor.Funcs
		wantErr string
	}{
		{name: "list", wantErr: "listing BtpOperator CRs", funcs: interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return boom },
		}},
		{name: "read Secret", wantErr: "reading Secret kyma-system/sap-btp-manager", funcs: interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return boom
			},
		}},
		{name: "write status", wantErr: "writing status of BtpOperator kyma-system/btpoperator", funcs: interceptor.Funcs{
			SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
				return boom
			},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			if err := btpmanager.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			cr := &btpmanager.BtpOperator{ObjectMeta: metav1.ObjectMeta{Namespace: btpmanager.Namespace, Name: "btpoperator"}}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(cr).WithStatusSubresource(cr).WithInterceptorFuncs(tc.funcs).Build()
			err := Reconcile(t.Context(), c)
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want %q wrapping %v", err, tc.wantErr, boom)
			}
		})
	}
}
