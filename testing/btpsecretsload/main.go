// Command btpsecretsload measures one pass of the sap-btp-manager Secret
// reconciler (internal/btpsecrets) over -runtimes running runtimes: a fresh
// kube-apiserver is the control plane and, through every runtime's
// kubeconfig Secret, the runtime of them all (one kyma-system/sap-btp-manager
// Secret, which every runtime's stored credentials and cluster ID match, so
// the first runtime recreates it and the rest find it unchanged). The
// clients come from keb's runtime client cache with its default bound, as
// in keb serve. It prints the pass's time, the database pages read and the
// most clients the cache held.
//
//	go run ./testing/btpsecretsload -database-url "$DB" -runtimes 2000
//
// It writes instances into the database: use one made for the measurement.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/btpsecrets"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/runtimeclient"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/k8stest"
)

const key = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// pagedStore counts the reconciler's database reads (one statement each).
type pagedStore struct {
	*storage.Store
	pages int
}

func (s *pagedStore) RunningInstances(ctx context.Context, after string, limit int) ([]storage.Instance, error) {
	s.pages++
	return s.Store.RunningInstances(ctx, after, limit)
}

func main() {
	dbURL := flag.String("database-url", os.Getenv("APP_DATABASE_URL"), "a migrated keb database made for the measurement")
	n := flag.Int("runtimes", 2000, "running runtimes")
	flag.Parse()
	if err := run(*dbURL, *n); err != nil {
		fmt.Fprintln(os.Stderr, "btpsecretsload:", err)
		os.Exit(1)
	}
}

func run(dbURL string, n int) error {
	ctx := context.Background()
	ctrllog.SetLogger(logr.Discard()) // controller-runtime's warnings are not the measurement
	crds, err := k8stest.CRDs()
	if err != nil {
		return err
	}
	env, err := k8stest.Start(crds)
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	scheme, err := app.Scheme()
	if err != nil {
		return err
	}
	kcp, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	const ns = "kcp-system"
	if err := kcp.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	kubeconfig, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	pool, err := storage.Open(ctx, dbURL, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	cipher, err := storage.NewCipher(key)
	if err != nil {
		return err
	}
	store := storage.NewStore(pool, cipher, nil)
	loadStart := time.Now()
	creds := []byte(`{"clientid":"c","clientsecret":"s","sm_url":"https://sm.example.com","url":"https://auth.example.com"}`)
	for i := range n {
		id := fmt.Sprintf("btpload-%06d", i)
		runtimeID := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		if err := store.CreateProvisioning(ctx, storage.Instance{InstanceID: id, GlobalAccountID: "ga-load", SubAccountID: "sa-" + id,
			ServiceID: "svc", PlanID: "plan-azure", PlanName: "azure", PlatformRegion: "cf-eu20", Provider: "azure",
			ProviderRegion: "westeurope", Credentials: creds}, storage.Operation{ID: "op-" + id, InstanceID: id,
			Type: storage.OperationTypeProvision, State: storage.OperationInProgress, Deadline: time.Now().Add(time.Hour)}); err != nil {
			return err
		}
		if _, err := store.Finish(ctx, storage.Operation{ID: "op-" + id, State: storage.OperationSucceeded, FinishedStages: []string{}}); err != nil {
			return err
		}
		if _, err := pool.Exec(ctx, `UPDATE instances SET runtime_id = $2, cluster_id = 'cluster-load' WHERE instance_id = $1`, id, runtimeID); err != nil {
			return err
		}
		if err := kcp.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
			Name: infrastructuremanager.KubeconfigSecretName(runtimeID)},
			Data: map[string][]byte{infrastructuremanager.KubeconfigKey: kubeconfig}}); err != nil {
			return err
		}
	}
	fmt.Printf("loaded %d running instances and kubeconfig Secrets in %s\n", n, time.Since(loadStart).Round(time.Millisecond))

	log := logrus.New()
	log.SetOutput(io.Discard)
	cache := runtimeclient.NewCache(kcp, ns, scheme, runtimeclient.Bounds{})
	st := &pagedStore{Store: store}
	r := &btpsecrets.Reconciler{Instances: st, Runtimes: cache, Log: log}
	counts := map[string]int{}
	maxClients := 0
	start := time.Now()
	_, ended, err := r.Pass(ctx, "", false, nil, func(res btpsecrets.Result) {
		counts[string(res.Action)]++
		maxClients = max(maxClients, cache.Len())
	})
	took := time.Since(start)
	if err != nil || !ended {
		return fmt.Errorf("pass: %v (ended %v)", err, ended)
	}
	fmt.Printf("pass over %d runtimes: %s (%.1f ms per runtime, %.0f runtimes/s); %d database pages; actions %v; most clients cached %d (bound %d)\n",
		n, took.Round(time.Millisecond), float64(took.Microseconds())/1000/float64(n), float64(n)/took.Seconds(),
		st.pages, counts, maxClients, runtimeclient.DefaultBounds.Max)
	return nil
}
