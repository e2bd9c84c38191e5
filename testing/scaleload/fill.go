package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// runtimeRow is what a runtime's control-plane objects are built from: its
// instance row as runtimesload wrote it.
type runtimeRow struct {
	inst     storage.Instance
	resolved map[string]any
}

// fillReport is what filling the control plane took: the first runtimes
// through the API (API*), the rest written into etcd (Bulk*).
type fillReport struct {
	Runtimes    int // runtimes whose objects exist afterwards
	APIObjects  int // objects created through the API (3 per runtime; their status writes not counted)
	APIRequests int // API requests (creates and status writes)
	APITook     time.Duration
	BulkObjects int // objects written into etcd
	BulkTook    time.Duration
	// APIServerRSS is the kube-apiserver's RSS after the fill (after a GC).
	APIServerRSS uint64
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// filler writes each runtime's Runtime CR (as create_runtime builds it, with
// the infrastructure manager's Ready status), Kyma CR (as apply_kyma builds
// it, with Lifecycle Manager's Ready status and module tracking objects)
// and kubeconfig Secret (as the infrastructure manager writes it: the
// Runtime's labels and a kubeconfig of a real one's size).
type filler struct {
	kcp     client.Client
	etcd    *etcdWriter
	cat     *catalog.Catalog
	workers int
	// viaAPI is how many runtimes of each fill go through the API (the
	// real path, and the templates of the bulk path); the rest go into
	// etcd.
	viaAPI int
}

// fill creates the objects of every runtime of db's instances (live ones:
// a suspended instance has no runtime) that the control plane lacks, up to
// limit runtimes. It is incremental: a larger N adds only the missing ones.
func (f *filler) fill(ctx context.Context, db *pgxpool.Pool, limit int) (fillReport, error) {
	runtimes, err := readRuntimes(ctx, db, limit)
	if err != nil {
		return fillReport{}, err
	}
	existing, err := f.existing(ctx)
	if err != nil {
		return fillReport{}, err
	}
	var missing []runtimeRow
	for _, r := range runtimes {
		if !existing[kyma.Name(r.inst.RuntimeID)] {
			missing = append(missing, r)
		}
	}
	rep := fillReport{Runtimes: len(runtimes)}
	api := missing[:min(f.viaAPI, len(missing))]
	start := time.Now()
	var created, requests atomic.Int64
	err = inParallel(ctx, api, f.workers, func(r runtimeRow) error {
		n, reqs, err := f.write(ctx, r)
		created.Add(int64(n))
		requests.Add(int64(reqs))
		return err
	})
	rep.APIObjects, rep.APIRequests, rep.APITook = int(created.Load()), int(requests.Load()), time.Since(start)
	if err != nil || len(missing) == len(api) {
		return rep, err
	}

	// The bulk path: what the API path stored, for the rest.
	tmpl := runtimes[0]
	if len(api) > 0 {
		tmpl = api[0]
	}
	templates, err := f.templates(ctx, tmpl)
	if err != nil {
		return rep, err
	}
	bulk := missing[len(api):]
	var batches [][]runtimeRow
	const perTxn = maxTxnOps / 3
	for i := 0; i < len(bulk); i += perTxn {
		batches = append(batches, bulk[i:min(i+perTxn, len(bulk))])
	}
	start = time.Now()
	var written atomic.Int64
	err = inParallel(ctx, batches, 4, func(batch []runtimeRow) error {
		kvs := map[string][]byte{}
		for _, r := range batch {
			rt, k, secret := f.objectsOf(r)
			for _, o := range []struct {
				group, resource string
				obj             client.Object
				managed         []metav1.ManagedFieldsEntry
			}{
				{im.GroupVersion.Group, "runtimes", rt, templates[0]},
				{kyma.GroupVersion.Group, "kymas", k, templates[1]},
				{"", "secrets", secret, templates[2]},
			} {
				b, err := stored(o.obj, o.managed)
				if err != nil {
					return err
				}
				kvs[storageKey(o.group, o.resource, o.obj)] = b
			}
		}
		if err := f.etcd.put(ctx, kvs); err != nil {
			return err
		}
		if n := written.Add(int64(len(kvs))); n/30000 != (n-int64(len(kvs)))/30000 {
			fmt.Printf("   %d objects written into etcd (%.0f/s)\n", n, perSecond(int(n), time.Since(start)))
		}
		return nil
	})
	rep.BulkObjects, rep.BulkTook = int(written.Load()), time.Since(start)
	if err != nil {
		return rep, err
	}
	return rep, f.verify(ctx, len(runtimes))
}

// readRuntimes reads the first limit live instances.
func readRuntimes(ctx context.Context, db *pgxpool.Pool, limit int) ([]runtimeRow, error) {
	rows, err := db.Query(ctx, `SELECT instance_id, runtime_id, global_account_id, subaccount_id, plan_id, plan_name,
		platform_region, provider, provider_region, shoot_name, parameters, resolved_parameters
		FROM instances WHERE state <> 'suspended' ORDER BY instance_id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading instances: %w", err)
	}
	defer rows.Close()
	var runtimes []runtimeRow
	for rows.Next() {
		var r runtimeRow
		i := &r.inst
		var resolved []byte
		if err := rows.Scan(&i.InstanceID, &i.RuntimeID, &i.GlobalAccountID, &i.SubAccountID, &i.PlanID, &i.PlanName,
			&i.PlatformRegion, &i.Provider, &i.ProviderRegion, &i.ShootName, &i.Parameters, &resolved); err != nil {
			return nil, err
		}
		_ = json.Unmarshal(resolved, &r.resolved)
		runtimes = append(runtimes, r)
	}
	return runtimes, rows.Err()
}

// existing names the Runtime CRs the control plane holds.
func (f *filler) existing(ctx context.Context) (map[string]bool, error) {
	names := map[string]bool{}
	err := f.listMeta(ctx, im.GroupVersion.WithKind("RuntimeList"), func(m metav1.PartialObjectMetadata) { names[m.Name] = true })
	return names, err
}

// listMeta pages through the metadata of a kind in the namespace.
func (f *filler) listMeta(ctx context.Context, gvk schema.GroupVersionKind, each func(metav1.PartialObjectMetadata)) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk)
	for {
		if err := f.kcp.List(ctx, list, client.InNamespace(controlplane.Namespace), client.Limit(5000), client.Continue(list.Continue)); err != nil {
			return fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for _, m := range list.Items {
			each(m)
		}
		if list.Continue == "" {
			return nil
		}
	}
}

// verify checks that the kube-apiserver serves runtimes objects of each kind
// (the bulk path's objects among them), labelled with their runtime. A
// replica measured at a smaller N may have begun deleting a runtime meanwhile
// (the trial expiry job suspends expired trials): its Runtime CR stays (the
// infrastructure manager's finalizer), its Kyma CR goes.
//
// It counts what the apiserver's watch cache holds (resourceVersion=0: the
// cache as it is, which keb's watches are served from), every 10 s until
// all are there. The cache takes the bulk writes in from etcd's watch at
// the pace the apiserver decodes them (a CR about 1.5 ms of CPU: minutes for
// 100,000 runtimes on a shared machine). A consistent (paged) list would
// instead wait for the cache and then fall back to etcd, decoding thousands
// of CRs per page on top: at 100,000 its pages did not answer within the
// apiserver's 60 s, twice.
func (f *filler) verify(ctx context.Context, runtimes int) error {
	start := time.Now()
	deadline := start.Add(20 * time.Minute)
	deleting := 0
	for i, gvk := range []schema.GroupVersionKind{im.GroupVersion.WithKind("RuntimeList"), kyma.GroupVersion.WithKind("KymaList"),
		corev1.SchemeGroupVersion.WithKind("SecretList")} {
		for {
			n, gone := 0, 0
			err := f.listCached(ctx, gvk, func(m metav1.PartialObjectMetadata) {
				if m.Labels[controlplane.LabelRuntimeID] != "" {
					n++
					if m.DeletionTimestamp != nil {
						gone++
					}
				}
			})
			if err != nil && time.Now().After(deadline) {
				return err
			}
			if err == nil {
				if i == 0 {
					deleting = gone
				}
				if n == runtimes || (i > 0 && n >= runtimes-deleting && n <= runtimes) {
					fmt.Printf("   the kube-apiserver serves all %d %s items after %s\n", n, gvk.Kind, time.Since(start).Round(time.Second))
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the kube-apiserver serves %d %s items of runtimes, want %d (%s)", n, gvk.Kind, runtimes, f.missingOf(ctx, gvk))
				}
				fmt.Printf("   the kube-apiserver's watch cache holds %d of %d %s items (%s)\n", n, runtimes, gvk.Kind, time.Since(start).Round(time.Second))
			}
			time.Sleep(10 * time.Second)
		}
	}
	return nil
}

// listCached lists the metadata of a kind in the namespace from the
// kube-apiserver's watch cache (resourceVersion=0, unpaged).
func (f *filler) listCached(ctx context.Context, gvk schema.GroupVersionKind, each func(metav1.PartialObjectMetadata)) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk)
	if err := f.kcp.List(ctx, list, client.InNamespace(controlplane.Namespace),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	for _, m := range list.Items {
		each(m)
	}
	return nil
}

// missingOf names a few runtimes whose object of gvk the apiserver does not
// serve, for the error.
func (f *filler) missingOf(ctx context.Context, gvk schema.GroupVersionKind) string {
	have := map[string]bool{}
	_ = f.listMeta(ctx, gvk, func(m metav1.PartialObjectMetadata) { have[m.Labels[controlplane.LabelRuntimeID]] = true })
	var missing []string
	_ = f.listMeta(ctx, im.GroupVersion.WithKind("RuntimeList"), func(m metav1.PartialObjectMetadata) {
		if id := m.Labels[controlplane.LabelRuntimeID]; !have[id] && len(missing) < 5 {
			missing = append(missing, id)
		}
	})
	return "missing e.g. " + strings.Join(missing, ", ")
}

// templates are the managed fields the API path left on r's three objects,
// which the bulk path gives its objects.
func (f *filler) templates(ctx context.Context, r runtimeRow) ([3][]metav1.ManagedFieldsEntry, error) {
	var out [3][]metav1.ManagedFieldsEntry
	name := kyma.Name(r.inst.RuntimeID)
	for i, o := range []client.Object{&im.Runtime{}, &kyma.Kyma{}, &corev1.Secret{}} {
		key := client.ObjectKey{Namespace: controlplane.Namespace, Name: name}
		if i == 2 {
			key.Name = im.KubeconfigSecretName(r.inst.RuntimeID)
		}
		if err := f.kcp.Get(ctx, key, o); err != nil {
			return out, fmt.Errorf("reading the template %T %s: %w", o, key.Name, err)
		}
		out[i] = o.GetManagedFields()
	}
	return out, nil
}

// inParallel runs fn for each of items on workers goroutines, stopping at
// the first error.
func inParallel[T any](ctx context.Context, items []T, workers int, fn func(T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan T)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := range work {
				if err := fn(b); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
feed:
	for _, b := range items {
		select {
		case work <- b:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return first
}

// objectsOf builds r's three objects with their statuses.
func (f *filler) objectsOf(r runtimeRow) (*im.Runtime, *kyma.Kyma, *corev1.Secret) {
	op := operationOf(r)
	params, _ := provisioning.Parameters(op)
	rt := provisioning.DesiredRuntime(op, params, f.cat, controlplane.Namespace, provisioning.RuntimeSettings{KubernetesVersion: config.Defaults.Engine.Runtime.KubernetesVersion})
	rt.TypeMeta = metav1.TypeMeta{APIVersion: im.GroupVersion.String(), Kind: "Runtime"}
	rt.Finalizers = []string{im.Finalizer}
	rt.Status = im.RuntimeStatus{State: im.StateReady, ProvisioningCompleted: true, Conditions: readyConditions()}
	k := kyma.NewKyma(provisioning.KymaInput(op, params), kyma.Settings{ShootDomain: "kyma.example.com"})
	k.Status = kymaStatus(k)
	labels := map[string]string{}
	for k, v := range rt.Labels {
		labels[k] = v
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: im.KubeconfigSecretName(r.inst.RuntimeID), Namespace: controlplane.Namespace, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{im.KubeconfigKey: kubeconfigOf(r.inst.ShootName)},
	}
	return rt, k, secret
}

// write creates one runtime's three objects through the API, skipping
// those that exist; it returns how many it created and the requests sent.
func (f *filler) write(ctx context.Context, r runtimeRow) (created, requests int, err error) {
	rt, k, secret := f.objectsOf(r)
	for _, o := range []struct {
		obj    client.Object
		status func() error
	}{
		{rt, func() error { return f.kcp.Status().Update(ctx, rt) }},
		{k, func() error { return f.kcp.Status().Update(ctx, k) }},
		{secret, nil},
	} {
		n, err := f.create(ctx, o.obj, o.status)
		created, requests = created+min(n, 1), requests+n
		if err != nil {
			return created, requests, fmt.Errorf("runtime %s: %w", r.inst.RuntimeID, err)
		}
	}
	return created, requests, nil
}

// create creates obj and then runs status (its status write: a create
// drops the status of a kind with a status subresource); an object that
// exists is left as it is. It returns the requests sent (0 when it existed).
func (f *filler) create(ctx context.Context, obj client.Object, status func() error) (int, error) {
	var st any
	switch o := obj.(type) {
	case *im.Runtime:
		st = o.Status
	case *kyma.Kyma:
		st = o.Status
	}
	err := f.kcp.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return 0, nil
	}
	if err != nil {
		return 1, err
	}
	if status == nil {
		return 1, nil
	}
	switch o := obj.(type) {
	case *im.Runtime:
		o.Status = st.(im.RuntimeStatus)
	case *kyma.Kyma:
		o.Status = st.(kyma.KymaStatus)
	}
	return 2, status()
}

// operationOf is the provisioning operation create_runtime and apply_kyma
// would have run for r, with the record its first steps resolve from the
// stored parameters.
func operationOf(r runtimeRow) *process.Operation {
	op := &process.Operation{Instance: r.inst}
	op.InstanceID = r.inst.InstanceID
	str := func(k string) string { s, _ := r.resolved[k].(string); return s }
	num := func(k string, def int) int {
		if v, ok := r.resolved[k].(float64); ok {
			return int(v)
		}
		return def
	}
	op.Record = process.Record{
		RuntimeID: r.inst.RuntimeID, ShootName: r.inst.ShootName, KymaVersion: "2.20.0",
		Provider: strings.ToLower(r.inst.Provider), Region: r.inst.ProviderRegion, ProviderRegion: r.inst.ProviderRegion,
		MachineType: str("machineType"), AutoScalerMin: num("autoScalerMin", 3), AutoScalerMax: num("autoScalerMax", 20),
		ZonesCount: 3, HyperscalerType: strings.ToLower(r.inst.Provider),
		HyperscalerSecret: strings.ToLower(r.inst.Provider) + "-" + r.inst.GlobalAccountID,
	}
	return op
}

// readyConditions are a provisioned Runtime's conditions as the
// infrastructure manager writes them.
func readyConditions() []metav1.Condition {
	at := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	return []metav1.Condition{
		{Type: im.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: im.ReasonShootCreationCompleted, Message: "Shoot creation completed", LastTransitionTime: at},
		{Type: im.ConditionKubeconfigReady, Status: metav1.ConditionTrue, Reason: im.ReasonGardenerClusterReady, Message: "Gardener Cluster CR is ready", LastTransitionTime: at},
		{Type: im.ConditionOIDCConfigured, Status: metav1.ConditionTrue, Reason: im.ReasonOIDCConfigured, Message: "OIDC configuration completed", LastTransitionTime: at},
		{Type: im.ConditionConfigured, Status: metav1.ConditionTrue, Reason: im.ReasonConfigurationCompleted, Message: "Runtime processing completed successfully", LastTransitionTime: at},
	}
}

// kymaStatus is Lifecycle Manager's status of a Kyma CR whose modules are
// all Ready: the state, a condition per aspect and, per module, the
// tracking objects of its Manifest, default CR and ModuleTemplate.
func kymaStatus(k *kyma.Kyma) kyma.KymaStatus {
	at := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	st := kyma.KymaStatus{State: kyma.StateReady, ActiveChannel: "regular",
		LastOperation: kyma.LastOperation{Operation: "kyma is ready", LastUpdateTime: at},
		Conditions: []metav1.Condition{
			{Type: "Modules", Status: metav1.ConditionTrue, Reason: "Ready", Message: "all modules are in ready state", LastTransitionTime: at},
			{Type: "ModuleCatalog", Status: metav1.ConditionTrue, Reason: "Ready", Message: "module templates are synchronized", LastTransitionTime: at},
			{Type: "SKRWebhook", Status: metav1.ConditionTrue, Reason: "Ready", Message: "skrwebhook is synchronized", LastTransitionTime: at},
		}}
	var modules []string
	for _, m := range k.Spec.Modules {
		modules = append(modules, m.Name)
	}
	for _, m := range modules {
		track := func(kind string) *kyma.TrackingObject {
			return &kyma.TrackingObject{PartialMeta: kyma.PartialMeta{Name: k.Name + "-" + m, Namespace: controlplane.Namespace, Generation: 1},
				TypeMeta: metav1.TypeMeta{APIVersion: "operator.kyma-project.io/v1beta2", Kind: kind}}
		}
		st.Modules = append(st.Modules, kyma.ModuleStatus{Name: m, FQDN: "kyma-project.io/module/" + m, Channel: "regular",
			Version: "1.2.3", State: kyma.StateReady, Manifest: track("Manifest"), Resource: track("CustomResource"), Template: track("ModuleTemplate")})
	}
	return st
}

// kubeconfigOf is a kubeconfig of a real runtime's size (about 3 KB: the
// CA certificate and an OIDC exec plugin), whose content nothing reads.
func kubeconfigOf(shoot string) []byte {
	ca := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("certificate-authority-data-"+shoot, 40)))
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
current-context: %[1]s
clusters:
- name: %[1]s
  cluster:
    server: https://api.%[1]s.kyma.example.com
    certificate-authority-data: %[2]s
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: %[1]s}
users:
- name: %[1]s
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: kubectl-oidc_login
      args: [get-token, --oidc-issuer-url=https://kyma.accounts.example.com, --oidc-client-id=12b13a26-d993-4d0c-aa08-5f5852bbdff6]
`, shoot, ca)
}
