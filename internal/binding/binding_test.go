package binding_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/binding"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// env is one kube-apiserver playing both parts: the control plane holding
// runtimes' kubeconfig Secrets, and every runtime those kubeconfigs point to.
var env *k8stest.Environment

func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &env, pgtest.Run)) }

const testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

var adminKubeconfig = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "binding-test")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
})

// bundle is one test's binding service on its own database, with a clock
// the test moves and the service's log kept.
type bundle struct {
	t     *testing.T
	ctx   context.Context
	svc   *binding.Service
	store *storage.Store
	kcp   client.Client
	now   time.Time
	logs  *bytes.Buffer
}

func setup(t *testing.T, tune func(*binding.Config)) *bundle {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	cipher, err := storage.NewCipher(testKey)
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(pgtest.NewPool(t), cipher, nil)
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kcp := processtest.Client(t, env.Config)
	processtest.EnsureNamespace(t, kcp, controlplane.Namespace)
	cfg := binding.Config{
		BindablePlanIDs: []string{catalog.AzurePlanID}, MaxPerInstance: 10,
		DefaultExpiration: 600 * time.Second, MinExpiration: 600 * time.Second, MaxExpiration: 7200 * time.Second,
		Role: "cluster-admin", Timeout: 30 * time.Second, AsyncTimeout: time.Minute,
	}
	if tune != nil {
		tune(&cfg)
	}
	logs := &bytes.Buffer{}
	log := logrus.New()
	log.SetOutput(&lockedWriter{w: logs})
	log.SetLevel(logrus.DebugLevel)
	log.SetFormatter(&logrus.JSONFormatter{})
	b := &bundle{t: t, ctx: ctx, store: store, kcp: kcp, now: time.Now(), logs: logs}
	b.svc = binding.New(store, runtimeclient.NewCache(kcp, controlplane.Namespace, scheme, runtimeclient.Bounds{}), cfg, log)
	b.svc.Now = func() time.Time { return b.now }
	t.Cleanup(b.svc.Close)
	return b
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// instance provisions an instance of plan as the engine would (its runtime
// is the test apiserver) and returns its ID.
func (b *bundle) instance(planID string) string {
	b.t.Helper()
	inst := processtest.Instance(b.t, planID)
	op := storage.Operation{ID: uuid.NewString(), InstanceID: inst.InstanceID, Type: storage.OperationTypeProvision,
		State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}
	if err := b.store.CreateProvisioning(b.ctx, inst, op); err != nil {
		b.t.Fatal(err)
	}
	runtimeID := uuid.NewString()
	if _, err := b.store.SetRuntimeIdentity(b.ctx, inst.InstanceID, storage.RuntimeIdentity{RuntimeID: runtimeID, ClusterID: "c", ShootName: "s"}); err != nil {
		b.t.Fatal(err)
	}
	kc, err := adminKubeconfig()
	if err != nil {
		b.t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)},
		Data: map[string][]byte{infrastructuremanager.KubeconfigKey: kc}}
	if err := b.kcp.Create(b.ctx, secret); err != nil {
		b.t.Fatal(err)
	}
	op.State, op.Description, op.FinishedStages = storage.OperationSucceeded, "done", []string{}
	if ok, err := b.store.Finish(b.ctx, op); err != nil || !ok {
		b.t.Fatalf("finishing provisioning: %v %v", ok, err)
	}
	return inst.InstanceID
}

func (b *bundle) bind(instanceID, bindingID, params string) (binding.Result, error) {
	b.t.Helper()
	var raw json.RawMessage
	if params != "" {
		raw = json.RawMessage(params)
	}
	return b.svc.Bind(b.ctx, binding.Request{InstanceID: instanceID, BindingID: bindingID, PlanID: catalog.AzurePlanID, Parameters: raw})
}

func (b *bundle) mustBind(instanceID, bindingID, params string) binding.Result {
	b.t.Helper()
	res, err := b.bind(instanceID, bindingID, params)
	if err != nil {
		b.t.Fatalf("bind %s: %v", bindingID, err)
	}
	return res
}

func kindOf(err error) binding.Kind {
	var e *binding.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

func mustKind(t *testing.T, what string, err error, want binding.Kind, mentions ...string) {
	t.Helper()
	if kindOf(err) != want {
		t.Fatalf("%s: error %v (kind %d), want kind %d", what, err, kindOf(err), want)
	}
	if missing := processtest.MissingFrom(err.Error(), mentions...); missing != "" {
		t.Fatalf("%s: %q does not say %q", what, err.Error(), missing)
	}
}

func TestBindGetUnbind(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	res := b.mustBind(inst, "b1", `{"expiration_seconds": 900}`)
	if res.AlreadyExists || res.Async || res.Kubeconfig == "" {
		t.Fatalf("bind: %+v", res)
	}
	if want := b.now.Add(900 * time.Second); res.ExpiresAt.Sub(want).Abs() > 2*time.Second {
		t.Errorf("expires at %s, want about %s", res.ExpiresAt, want)
	}
	if err := k8stest.ListNamespaces(b.ctx, res.Kubeconfig); err != nil {
		t.Fatalf("the bound kubeconfig does not list namespaces: %v", err)
	}
	// What the runtime holds: the ServiceAccount, bound to cluster-admin.
	var crbs rbacv1.ClusterRoleBindingList
	if err := b.kcp.List(b.ctx, &crbs, client.MatchingLabels{binding.LabelBindingID: "b1", controlplane.LabelInstanceID: inst}); err != nil || len(crbs.Items) != 1 {
		t.Fatalf("cluster role bindings of b1: %v %v", crbs.Items, err)
	}
	if crb := crbs.Items[0]; crb.RoleRef.Name != "cluster-admin" || crb.Subjects[0].Namespace != binding.Namespace {
		t.Errorf("cluster role binding %+v", crb)
	}

	creds, params, err := b.svc.Get(b.ctx, inst, "b1")
	if err != nil || creds.Kubeconfig != res.Kubeconfig || !creds.ExpiresAt.Equal(res.ExpiresAt) || string(params) != `{"expiration_seconds": 900}` {
		t.Fatalf("get: %+v %s %v", creds.ExpiresAt, params, err)
	}
	_, _, err = b.svc.Get(b.ctx, "other-instance", "b1")
	mustKind(t, "get under another instance", err, binding.KindNotFound)

	if err := b.svc.Unbind(b.ctx, inst, "b1"); err != nil {
		t.Fatal(err)
	}
	k8stest.WaitRefused(t, "", res.Kubeconfig)
	if err := b.kcp.List(b.ctx, &crbs, client.MatchingLabels{binding.LabelBindingID: "b1"}); err != nil || len(crbs.Items) != 0 {
		t.Fatalf("cluster role bindings left after unbind: %v %v", crbs.Items, err)
	}
	mustKind(t, "unbind again", b.svc.Unbind(b.ctx, inst, "b1"), binding.KindGone)
	_, _, err = b.svc.Get(b.ctx, inst, "b1")
	mustKind(t, "get after unbind", err, binding.KindNotFound)
}

func TestIdenticalAndDifferentPUT(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	first := b.mustBind(inst, "b1", "")
	// Absent parameters equal {}: identical.
	again := b.mustBind(inst, "b1", "{}")
	if !again.AlreadyExists || again.Kubeconfig != first.Kubeconfig || !again.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("identical PUT: %+v", again)
	}
	_, err := b.bind(inst, "b1", `{"expiration_seconds": 1200}`)
	mustKind(t, "different parameters", err, binding.KindConflict, "different parameters")
	other := b.instance(catalog.AzurePlanID)
	_, err = b.bind(other, "b1", "")
	mustKind(t, "binding ID of another instance", err, binding.KindConflict, "another instance")
	_, err = b.svc.Bind(b.ctx, binding.Request{InstanceID: inst, BindingID: "b2", PlanID: catalog.GCPPlanID})
	mustKind(t, "another plan", err, binding.KindInvalid, catalog.GCPPlanID, "azure")
	if n := len(b.bindings(inst)); n != 1 {
		t.Fatalf("%d bindings, want 1: refusals write nothing", n)
	}
}

func (b *bundle) bindings(instanceID string) []storage.Binding {
	b.t.Helper()
	bs, err := b.store.InstanceBindings(b.ctx, instanceID)
	if err != nil {
		b.t.Fatal(err)
	}
	return bs
}

func TestLimitPerInstance(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *binding.Config) { c.MaxPerInstance = 2 })
	inst := b.instance(catalog.AzurePlanID)
	b.mustBind(inst, "b1", "")
	b.mustBind(inst, "b2", "")
	_, err := b.bind(inst, "b3", "")
	mustKind(t, "third binding", err, binding.KindLimit, "2 live bindings", "APP_BROKER_BINDING_MAX_PER_INSTANCE=2")
	// The limit is per instance.
	b.mustBind(b.instance(catalog.AzurePlanID), "b4", "")
	// Unbinding frees a slot; so does expiry.
	if err := b.svc.Unbind(b.ctx, inst, "b1"); err != nil {
		t.Fatal(err)
	}
	b.mustBind(inst, "b3", "")
	b.now = b.now.Add(601 * time.Second)
	b.mustBind(inst, "b5", "")
}

func TestInstancesThatCannotBeBound(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cases := []struct {
		name  string
		state storage.RuntimeState
		kind  binding.Kind
		says  string
	}{
		{"provisioning", storage.RuntimeProvisioning, binding.KindNotBindable, "being provisioned"},
		{"failed", storage.RuntimeFailed, binding.KindNotBindable, "provisioning failed"},
		{"suspended", storage.RuntimeSuspended, binding.KindNotBindable, "suspended"},
		{"deprovisioning", storage.RuntimeDeprovisioning, binding.KindNotBindable, "being deprovisioned"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inst := b.instance(catalog.AzurePlanID)
			if _, err := b.store.Pool().Exec(b.ctx, `UPDATE instances SET state = $2 WHERE instance_id = $1`, inst, tc.state); err != nil {
				t.Fatal(err)
			}
			_, err := b.bind(inst, "b-"+tc.name, "")
			mustKind(t, tc.name, err, tc.kind, tc.says)
		})
	}
	t.Run("unknown instance", func(t *testing.T) {
		_, err := b.bind("nope", "b-nope", "")
		mustKind(t, "unknown instance", err, binding.KindInstanceNotFound)
	})
	t.Run("plan not bindable", func(t *testing.T) {
		inst := processtest.Instance(t, catalog.TrialPlanID)
		op := storage.Operation{ID: uuid.NewString(), InstanceID: inst.InstanceID, Type: storage.OperationTypeProvision,
			State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}
		if err := b.store.CreateProvisioning(b.ctx, inst, op); err != nil {
			t.Fatal(err)
		}
		_, err := b.svc.Bind(b.ctx, binding.Request{InstanceID: inst.InstanceID, BindingID: "b-trial", PlanID: catalog.TrialPlanID})
		mustKind(t, "trial", err, binding.KindInvalid, "trial cannot be bound")
	})
}

func TestExpirationParameter(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	for _, bad := range []string{`{"expiration_seconds": 599}`, `{"expiration_seconds": 7201}`, `{"expiration_seconds": 600.5}`,
		`{"expiration_seconds": "600"}`, `{"expiration_seconds": 600, "role": "admin"}`, `[1]`} {
		_, err := b.bind(inst, "b1", bad)
		mustKind(t, bad, err, binding.KindInvalid)
	}
	for _, good := range []string{`{"expiration_seconds": 600}`, `{"expiration_seconds": 7200}`} {
		res := b.mustBind(inst, uuid.NewString(), good)
		if res.Kubeconfig == "" {
			t.Fatalf("%s: no kubeconfig", good)
		}
	}
	res := b.mustBind(inst, "default", "")
	if d := res.ExpiresAt.Sub(b.now); d < 598*time.Second || d > 602*time.Second {
		t.Errorf("default expiration %s, want 600s", d)
	}
}

func TestExpiredBindingsArePruned(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	short := b.mustBind(inst, "short", `{"expiration_seconds": 600}`)
	long := b.mustBind(inst, "long", `{"expiration_seconds": 3600}`)
	if n, err := b.svc.Prune(b.ctx); err != nil || n != 0 {
		t.Fatalf("prune before expiry: %d %v", n, err)
	}
	b.now = b.now.Add(601 * time.Second)
	_, _, err := b.svc.Get(b.ctx, inst, "short")
	mustKind(t, "get expired", err, binding.KindNotFound, "expired")
	if n, err := b.svc.Prune(b.ctx); err != nil || n != 1 {
		t.Fatalf("prune after expiry: %d %v", n, err)
	}
	// The token of the expired binding would live 10 minutes more by its
	// own clock; removing the ServiceAccount ends it now.
	k8stest.WaitRefused(t, "", short.Kubeconfig)
	if err := k8stest.ListNamespaces(b.ctx, long.Kubeconfig); err != nil {
		t.Fatalf("the unexpired binding stopped working: %v", err)
	}
	bs := b.bindings(inst)
	if len(bs) != 1 || bs[0].BindingID != "long" {
		t.Fatalf("bindings after pruning: %+v", bs)
	}
	// An identical PUT of an expired binding binds anew.
	b.now = b.now.Add(3600 * time.Second)
	renewed := b.mustBind(inst, "long", `{"expiration_seconds": 3600}`)
	if renewed.AlreadyExists || renewed.Kubeconfig == long.Kubeconfig {
		t.Fatalf("PUT over an expired binding: %+v", renewed)
	}
	k8stest.WaitRefused(t, "", long.Kubeconfig)
	if err := k8stest.ListNamespaces(b.ctx, renewed.Kubeconfig); err != nil {
		t.Fatalf("the renewed binding does not work: %v", err)
	}
}

func TestAsyncBind(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	req := binding.Request{InstanceID: inst, BindingID: "async", PlanID: catalog.AzurePlanID, Async: true}
	res, err := b.svc.Bind(b.ctx, req)
	if err != nil || !res.Async || res.OperationID == "" {
		t.Fatalf("async bind: %+v %v", res, err)
	}
	var state storage.BindingState
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var desc string
		if state, desc, err = b.svc.LastOperation(b.ctx, inst, "async", res.OperationID); err != nil {
			t.Fatal(err)
		}
		if state != storage.BindingInProgress {
			if state != storage.BindingSucceeded {
				t.Fatalf("async bind ended %s: %s", state, desc)
			}
			break
		}
		// While in progress, GET is a 404. The bind may finish between the
		// two reads: a GET that finds the binding must then find it done.
		_, _, err := b.svc.Get(b.ctx, inst, "async")
		if err == nil {
			if now, desc, lerr := b.svc.LastOperation(b.ctx, inst, "async", res.OperationID); lerr != nil || now != storage.BindingSucceeded {
				t.Fatalf("get answered the binding while its operation is %s (%s, %v)", now, desc, lerr)
			}
			continue
		}
		if kindOf(err) != binding.KindNotFound {
			t.Fatalf("get while binding: %v", err)
		}
	}
	if state != storage.BindingSucceeded {
		t.Fatalf("async bind still %s", state)
	}
	creds, _, err := b.svc.Get(b.ctx, inst, "async")
	if err != nil {
		t.Fatal(err)
	}
	if err := k8stest.ListNamespaces(b.ctx, creds.Kubeconfig); err != nil {
		t.Fatalf("the async binding's kubeconfig: %v", err)
	}
	_, _, err = b.svc.LastOperation(b.ctx, inst, "async", "other-operation")
	mustKind(t, "last_operation of another operation", err, binding.KindNotFound)
	again, err := b.svc.Bind(b.ctx, req)
	if err != nil || !again.AlreadyExists || again.Kubeconfig != creds.Kubeconfig {
		t.Fatalf("identical PUT after the async bind: %+v %v", again, err)
	}
}

func TestRemoveAll(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	other := b.instance(catalog.AzurePlanID)
	one, two := b.mustBind(inst, "b1", ""), b.mustBind(inst, "b2", "")
	kept := b.mustBind(other, "b3", "")
	if n, err := b.svc.RemoveAll(b.ctx, inst); err != nil || n != 2 {
		t.Fatalf("remove all: %d %v", n, err)
	}
	k8stest.WaitRefused(t, "", one.Kubeconfig)
	k8stest.WaitRefused(t, "", two.Kubeconfig)
	if len(b.bindings(inst)) != 0 || len(b.bindings(other)) != 1 {
		t.Fatal("remove all touched the wrong bindings")
	}
	if err := k8stest.ListNamespaces(b.ctx, kept.Kubeconfig); err != nil {
		t.Fatalf("another instance's binding stopped working: %v", err)
	}
}

// The kubeconfig's token is a bearer secret: sealed in the table, never in
// a log line.
func TestSecretsNeverInPlainText(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	res := b.mustBind(inst, "b1", "")
	cfg, err := clientcmd.Load([]byte(res.Kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, u := range cfg.AuthInfos {
		token = u.Token
	}
	if len(token) < 100 {
		t.Fatalf("no token in the kubeconfig: %q", token)
	}
	b.mustBind(inst, "b1", "")
	if _, _, err := b.svc.Get(b.ctx, inst, "b1"); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Unbind(b.ctx, inst, "b1"); err != nil {
		t.Fatal(err)
	}
	b.mustBind(inst, "b2", "")
	var plain int
	if err := b.store.Pool().QueryRow(b.ctx, `SELECT count(*) FROM bindings
		WHERE to_jsonb(bindings)::text LIKE '%' || $1 || '%' OR to_jsonb(bindings)::text LIKE '%apiVersion%'
		OR encrypted_kubeconfig NOT LIKE 'v1.%'`, token[len(token)-40:]).Scan(&plain); err != nil {
		t.Fatal(err)
	}
	if plain != 0 {
		t.Fatal("a kubeconfig or token is stored in plain text")
	}
	logs := b.logs.String()
	if !strings.Contains(logs, "binding created") {
		t.Fatalf("no log lines captured: %s", logs)
	}
	for _, secret := range []string{token[len(token)-40:], "certificate-authority-data", "apiVersion"} {
		if strings.Contains(logs, secret) {
			t.Fatalf("the log holds %q", secret)
		}
	}
}

// Binds of one instance are serialised on its row: racing PUTs never pass
// the limit together.
func TestConcurrentBindsKeepTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *binding.Config) { c.MaxPerInstance = 3 })
	inst := b.instance(catalog.AzurePlanID)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := b.svc.Bind(b.ctx, binding.Request{InstanceID: inst, BindingID: fmt.Sprintf("race-%d", i), PlanID: catalog.AzurePlanID})
			errs <- err
		}()
	}
	bound, limited := 0, 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			bound++
		case kindOf(err) == binding.KindLimit:
			limited++
		default:
			t.Errorf("unexpected refusal: %v", err)
		}
	}
	if bound != 3 || limited != n-3 || len(b.bindings(inst)) != 3 {
		t.Fatalf("%d bound, %d refused by the limit, %d stored; want 3, %d, 3", bound, limited, len(b.bindings(inst)), n-3)
	}
}

// deadRuntime provisions an instance whose runtime kubeconfig points to a
// port nobody listens on.
func (b *bundle) deadRuntime() string {
	b.t.Helper()
	inst := b.instance(catalog.AzurePlanID)
	got, err := b.store.Instance(b.ctx, inst)
	if err != nil {
		b.t.Fatal(err)
	}
	kc := []byte(`apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: keb, user: {token: t}}]
contexts: [{name: dead, context: {cluster: dead, user: keb}}]
current-context: dead
`)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: controlplane.Namespace, Name: infrastructuremanager.KubeconfigSecretName(got.RuntimeID)}}
	secret.Data = map[string][]byte{infrastructuremanager.KubeconfigKey: kc}
	if err := b.kcp.Update(b.ctx, secret); err != nil {
		b.t.Fatal(err)
	}
	return inst
}

func TestRuntimeThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *binding.Config) { c.Timeout, c.AsyncTimeout = 2*time.Second, 3*time.Second })
	inst := b.deadRuntime()
	t.Run("a synchronous bind is refused and hands out nothing", func(t *testing.T) {
		_, err := b.bind(inst, "sync", "")
		mustKind(t, "sync bind", err, binding.KindUnavailable, "nothing was bound", "accepts_incomplete")
		_, _, err = b.svc.Get(b.ctx, inst, "sync")
		mustKind(t, "get", err, binding.KindNotFound)
	})
	t.Run("an asynchronous bind retries, then fails for last_operation", func(t *testing.T) {
		res, err := b.svc.Bind(b.ctx, binding.Request{InstanceID: inst, BindingID: "async", PlanID: catalog.AzurePlanID, Async: true})
		if err != nil || !res.Async {
			t.Fatalf("async bind: %+v %v", res, err)
		}
		var state storage.BindingState
		var desc string
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if state, desc, err = b.svc.LastOperation(b.ctx, inst, "async", res.OperationID); err != nil || state != storage.BindingInProgress {
				break
			}
		}
		if err != nil || state != storage.BindingFailed || !strings.Contains(desc, "did not complete the binding within 3s") {
			t.Fatalf("last_operation: %s %q %v", state, desc, err)
		}
	})
}

// A bind whose replica died mid-way stays in progress until its deadline;
// then the prune job fails it, so last_operation ends and the slot frees.
func TestOverdueBindIsFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *binding.Config) { c.MaxPerInstance = 1 })
	inst := b.instance(catalog.AzurePlanID)
	err := b.store.PutBinding(b.ctx, inst, "orphan", b.now, func(i storage.Instance, _ *storage.Binding, _ int) (*storage.Binding, error) {
		return &storage.Binding{BindingID: "orphan", InstanceID: inst, RuntimeID: i.RuntimeID, PlanID: catalog.AzurePlanID,
			State: storage.BindingInProgress, OperationID: "op-1", ServiceAccount: "keb-binding-orphan",
			ExpiresAt: b.now.Add(time.Hour), Deadline: b.now.Add(time.Minute)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.bind(inst, "other", "")
	mustKind(t, "bind while the orphan counts", err, binding.KindLimit)
	_, err = b.bind(inst, "orphan", "")
	mustKind(t, "sync PUT of a bind in progress", err, binding.KindConcurrent, "being created")
	if n, err := b.svc.Prune(b.ctx); err != nil || n != 0 {
		t.Fatalf("prune before the deadline: %d %v", n, err)
	}
	b.now = b.now.Add(2 * time.Minute)
	if n, err := b.svc.Prune(b.ctx); err != nil || n != 1 {
		t.Fatalf("prune after the deadline: %d %v", n, err)
	}
	state, desc, err := b.svc.LastOperation(b.ctx, inst, "orphan", "op-1")
	if err != nil || state != storage.BindingFailed || !strings.Contains(desc, "not completed in time") {
		t.Fatalf("last_operation of the overdue bind: %s %q %v", state, desc, err)
	}
	b.mustBind(inst, "other", "")
}

// A bind left in progress past its deadline (its request ended or its
// replica died before it was completed or removed: a database failover in
// between) is replaced by a re-sent PUT at once, as the prune job would
// fail it, instead of being answered "being created" until the prune job
// comes.
func TestAbandonedBindIsReplacedByItsPUT(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	err := b.store.PutBinding(b.ctx, inst, "abandoned", b.now, func(i storage.Instance, _ *storage.Binding, _ int) (*storage.Binding, error) {
		return &storage.Binding{BindingID: "abandoned", InstanceID: inst, RuntimeID: i.RuntimeID, PlanID: catalog.AzurePlanID,
			State: storage.BindingInProgress, OperationID: "op-1", ServiceAccount: "keb-binding-abandoned",
			ExpiresAt: b.now.Add(time.Hour), Deadline: b.now.Add(time.Minute)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.bind(inst, "abandoned", "")
	mustKind(t, "sync PUT of a bind in progress before its deadline", err, binding.KindConcurrent, "being created")
	b.now = b.now.Add(2 * time.Minute)
	res := b.mustBind(inst, "abandoned", "")
	if res.AlreadyExists || res.Kubeconfig == "" || res.OperationID == "op-1" {
		t.Fatalf("PUT after the deadline: %+v, want a new binding", res)
	}
	got, err := b.store.Binding(b.ctx, "abandoned")
	if err != nil || got.State != storage.BindingSucceeded || got.OperationID != res.OperationID {
		t.Fatalf("stored binding: %+v %v", got, err)
	}
}

// CompleteBinding run again for the same bind (its first run committed but
// the answer was lost in a failover) reports the completion again, so the
// bind does not take its own binding for removed and tear it down; another
// operation, or a binding removed meanwhile, is still refused.
func TestCompleteBindingAgainAfterALostAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	inst := b.instance(catalog.AzurePlanID)
	err := b.store.PutBinding(b.ctx, inst, "b1", b.now, func(i storage.Instance, _ *storage.Binding, _ int) (*storage.Binding, error) {
		return &storage.Binding{BindingID: "b1", InstanceID: inst, RuntimeID: i.RuntimeID, PlanID: catalog.AzurePlanID,
			State: storage.BindingInProgress, OperationID: "op-1", ServiceAccount: "keb-binding-b1",
			ExpiresAt: b.now.Add(time.Hour), Deadline: b.now.Add(time.Minute)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		op string
		ok bool
	}{{"op-1", true}, {"op-1", true}, {"op-2", false}} {
		if ok, err := b.store.CompleteBinding(b.ctx, "b1", want.op, []byte("kubeconfig"), b.now.Add(time.Hour)); err != nil || ok != want.ok {
			t.Fatalf("CompleteBinding #%d under %s = %v, %v; want %v", i+1, want.op, ok, err, want.ok)
		}
	}
	if got, err := b.store.Binding(b.ctx, "b1"); err != nil || got.State != storage.BindingSucceeded || string(got.Kubeconfig) != "kubeconfig" {
		t.Fatalf("binding after its completions: %+v %v", got, err)
	}
	if _, err := b.store.DeleteBinding(b.ctx, "b1", "op-1"); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.store.CompleteBinding(b.ctx, "b1", "op-1", []byte("kubeconfig"), b.now.Add(time.Hour)); err != nil || ok {
		t.Fatalf("CompleteBinding of a removed binding = %v, %v; want false", ok, err)
	}
}
