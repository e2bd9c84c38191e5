package btpsecrets_test

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/btpmanager"
	"github.com/kyma-keb/keb/internal/btpsecrets"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// env is the control plane, and the runtime its kubeconfig Secret points
// back at (one runtime: kyma-system/sap-btp-manager is a fixed name).
var env *k8stest.Environment

func TestMain(m *testing.M) { os.Exit(k8stest.Run(m, &env, pgtest.Run)) }

const testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

const smCredentials = `{"clientid":"client-1","clientsecret":"secret-1","sm_url":"https://sm.example","url":"https://token.example"}`

// counted is a btpsecrets.Counter.
type counted struct {
	mu sync.Mutex
	n  map[btpmanager.Action]int
}

func (c *counted) Reconciled(a btpmanager.Action, _ bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[a]++
}

func kubeconfig(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// provisioned stores a running instance with runtimeID, and, when creds is
// set, its credentials and cluster ID.
func provisioned(t *testing.T, ctx context.Context, store *storage.Store, id, runtimeID string, creds bool) {
	t.Helper()
	inst := storage.Instance{InstanceID: id, GlobalAccountID: "ga-" + id, SubAccountID: "sa-" + id,
		ServiceID: "svc", PlanID: "plan-azure", PlanName: "azure", PlatformRegion: "cf-eu20", Provider: "azure",
		ProviderRegion: "westeurope"}
	if creds {
		inst.Credentials = []byte(smCredentials)
	}
	if err := store.CreateProvisioning(ctx, inst, storage.Operation{ID: "op-" + id, InstanceID: id,
		Type: storage.OperationTypeProvision, State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("CreateProvisioning: %v", err)
	}
	if ok, err := store.Finish(ctx, storage.Operation{ID: "op-" + id, State: storage.OperationSucceeded,
		Description: "provisioned", FinishedStages: []string{}}); err != nil || !ok {
		t.Fatalf("Finish = %v, %v", ok, err)
	}
	clusterID := ""
	if creds {
		clusterID = "cluster-" + id
	}
	if _, err := store.Pool().Exec(ctx, `UPDATE instances SET runtime_id = $2, cluster_id = $3 WHERE instance_id = $1`,
		id, runtimeID, clusterID); err != nil {
		t.Fatal(err)
	}
}

// TestDriftRepair runs the reconciler on PostgreSQL and a kube-apiserver:
// a deleted Secret is recreated, an edited one rewritten, one labelled
// skip-reconciliation left alone; a dry run changes nothing; a runtime keb
// stores no credentials for is counted, not touched; the periodic job saves
// where its pass ended and starts none before the interval.
func TestDriftRepair(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cipher, err := storage.NewCipher(testKey)
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewStore(pgtest.NewPool(t), cipher, nil)
	kcp := env.Client(t, k8stest.Scheme(t))
	const ns = "kcp-system"
	k8stest.EnsureNamespace(t, kcp, ns)
	runtimeID := uuid.NewString() // -count reruns share the apiserver
	// The runtime (this apiserver) starts without BTP Manager's Secret.
	_ = client.IgnoreNotFound(kcp.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}}))
	if err := kcp.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
		Name: infrastructuremanager.KubeconfigSecretName(runtimeID)},
		Data: map[string][]byte{infrastructuremanager.KubeconfigKey: kubeconfig(t, env.Config)}}); err != nil {
		t.Fatal(err)
	}
	provisioned(t, ctx, store, "inst-a", runtimeID, true)
	provisioned(t, ctx, store, "inst-b", uuid.NewString(), false)
	log := logrus.New()
	log.SetOutput(io.Discard)
	counter := &counted{n: map[btpmanager.Action]int{}}
	r := &btpsecrets.Reconciler{Instances: store, Runtimes: runtimeclient.NewCache(kcp, ns, k8stest.Scheme(t), runtimeclient.Bounds{}),
		Counter: counter, Log: log, PageSize: 1}
	secretKey := client.ObjectKey{Namespace: btpmanager.Namespace, Name: btpmanager.SecretName}

	pass := func(dryRun bool) map[string]btpsecrets.Result {
		t.Helper()
		got := map[string]btpsecrets.Result{}
		_, ended, err := r.Pass(ctx, "", dryRun, nil, func(res btpsecrets.Result) { got[res.InstanceID] = res })
		if err != nil || !ended {
			t.Fatalf("Pass = %v, ended %v", err, ended)
		}
		if got["inst-b"].Action != btpmanager.ActionNoCredentials {
			t.Errorf("inst-b without credentials: %+v, want no_credentials", got["inst-b"])
		}
		return got
	}
	expect := func(what string, want btpmanager.Action, dryRun bool) {
		t.Helper()
		if got := pass(dryRun)["inst-a"]; got.Action != want {
			t.Fatalf("%s: %+v, want %s", what, got, want)
		}
	}
	readSecret := func() (*corev1.Secret, bool) {
		t.Helper()
		var s corev1.Secret
		err := kcp.Get(ctx, secretKey, &s)
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return &s, true
	}
	wantData := map[string]string{"clientid": "client-1", "clientsecret": "secret-1", "sm_url": "https://sm.example",
		"tokenurl": "https://token.example", "cluster_id": "cluster-inst-a"}
	checkData := func(what string) {
		t.Helper()
		s, ok := readSecret()
		if !ok {
			t.Fatalf("%s: no Secret", what)
		}
		for k, v := range wantData {
			if string(s.Data[k]) != v {
				t.Errorf("%s: %s = %q, want %q", what, k, s.Data[k], v)
			}
		}
	}

	// Missing: a dry run says so and creates nothing; a pass recreates it.
	expect("missing, dry run", btpmanager.ActionRecreated, true)
	if _, ok := readSecret(); ok {
		t.Fatal("a dry run created the Secret")
	}
	expect("missing", btpmanager.ActionRecreated, false)
	checkData("recreated")
	expect("as stored", btpmanager.ActionUnchanged, false)

	// Edited in the runtime: rewritten.
	s, _ := readSecret()
	s.Data["clientsecret"] = []byte("someone-else's")
	delete(s.Labels, btpmanager.LabelWatchedBy)
	if err := kcp.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	expect("edited, dry run", btpmanager.ActionRewritten, true)
	if s, _ := readSecret(); string(s.Data["clientsecret"]) != "someone-else's" {
		t.Fatal("a dry run rewrote the Secret")
	}
	expect("edited", btpmanager.ActionRewritten, false)
	checkData("rewritten")
	if s, _ := readSecret(); s.Labels[btpmanager.LabelWatchedBy] != btpmanager.ManagedByKEB {
		t.Errorf("labels %v: keb's watched-by label not restored", s.Labels)
	}

	// Deleted again: recreated.
	s, _ = readSecret()
	if err := kcp.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	expect("deleted", btpmanager.ActionRecreated, false)
	checkData("recreated after deletion")

	// Taken over: left alone, edit and all.
	s, _ = readSecret()
	s.Labels[btpmanager.LabelSkipReconciliation] = "true"
	s.Data["sm_url"] = []byte("https://their-sm.example")
	if err := kcp.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	expect("labelled skip-reconciliation", btpmanager.ActionSkipped, false)
	if s, _ := readSecret(); string(s.Data["sm_url"]) != "https://their-sm.example" {
		t.Error("a Secret labelled skip-reconciliation was rewritten")
	}
	if counter.n[btpmanager.ActionRecreated] != 3 || counter.n[btpmanager.ActionRewritten] != 2 || counter.n[btpmanager.ActionSkipped] != 1 {
		t.Errorf("counted %v", counter.n)
	}

	// The periodic job: a pass, then nothing until the interval passed.
	now := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	p := &btpsecrets.Periodic{Reconciler: r, Walks: store, Interval: 24 * time.Hour, Budget: time.Hour,
		Now: func() time.Time { return now }}
	before := counter.n[btpmanager.ActionNoCredentials]
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := store.Walk(ctx, btpsecrets.Job)
	if err != nil || w.Cursor != "" || w.PassFinishedAt == nil || !w.PassFinishedAt.Equal(now) {
		t.Fatalf("walk after a whole pass: %+v, %v", w, err)
	}
	now = now.Add(time.Hour)
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := counter.n[btpmanager.ActionNoCredentials] - before; got != 1 {
		t.Errorf("inst-b looked at %d times in a pass and a run an hour later, want 1", got)
	}
}
