package process

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
)

// TestTheWatchHoldsOneCompactRecordPerRuntime feeds a runtime's objects as
// the API server serves them (spec, every label, annotations, finalizers,
// managed fields) through the watch's transform and processing, and checks
// what the watch holds, since that grows with the fleet (docs/performance.md,
// "Fleet scale"): one record for the runtime's Runtime CR, Kyma CR and
// kubeconfig Secret, small enough for the map to hold inline, from which
// Seen and SeenList give back exactly what the steps read (the Runtime's
// state and conditions as infrastructuremanager.Fingerprint and Explain see
// them, its deletion and instance label, the Kyma CR's health), and nothing
// for the runtime's other Secrets. Deleting the objects empties it.
func TestTheWatchHoldsOneCompactRecordPerRuntime(t *testing.T) {
	t.Parallel()
	const ns = "kcp-system"
	if size := unsafe.Sizeof(seenRuntime{}); size > 128 {
		t.Errorf("a runtime's record is %d bytes; over 128 a Go map holds it out of line, an allocation more per runtime", size)
	}
	runtimeID := "0d5d8c1a-4b8e-4f0e-9f43-3c2f8a1b2c3d"
	managed := []metav1.ManagedFieldsEntry{{Manager: "kim", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}}
	rt := runtimetest.Runtime(ns, runtimeID)
	rt.ResourceVersion, rt.Annotations, rt.Finalizers, rt.ManagedFields = "7", map[string]string{"note": "x"}, []string{im.Finalizer}, managed
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	rt.Status = im.RuntimeStatus{State: im.StateReady, ProvisioningCompleted: true, Conditions: []metav1.Condition{
		{Type: im.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: im.ReasonShootCreationCompleted, LastTransitionTime: metav1.NewTime(t0), ObservedGeneration: 3},
		{Type: im.ConditionKubeconfigReady, Status: metav1.ConditionTrue, Reason: im.ReasonGardenerClusterReady, Message: "ready", LastTransitionTime: metav1.NewTime(t0.Add(time.Minute))},
	}}
	k := kyma.NewKyma(kyma.KymaInput{RuntimeID: runtimeID, InstanceID: "i"}, kyma.Settings{ShootDomain: "example.com"})
	k.Namespace, k.ResourceVersion, k.ManagedFields = ns, "42", managed
	k.Status = kyma.KymaStatus{State: kyma.StateError, ActiveChannel: "regular", Modules: []kyma.ModuleStatus{
		{Name: "btp-operator", State: kyma.StateReady, FQDN: "f", Manifest: &kyma.TrackingObject{PartialMeta: kyma.PartialMeta{Name: "m"}}},
		{Name: "istio", State: kyma.StateError, Message: "no template"}}}
	secret := func(name string) *metav1.PartialObjectMetadata {
		s := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ManagedFields: managed,
			Labels: map[string]string{controlplane.LabelRuntimeID: runtimeID, controlplane.LabelShootName: "c-0d5d8c1"}}}
		s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return s
	}

	w := NewWatcher(nil, nil, ns, nil, nil, logrus.New())
	store := newSeenStore(ns)
	wakes := &wakeQueue{signal: make(chan struct{}, 1)}
	feed := func(typ toolscache.DeltaType, objs ...k8sruntime.Object) {
		t.Helper()
		for _, o := range objs {
			e, err := watchTransform(served(t, o))
			if err != nil {
				t.Fatal(err)
			}
			w.process(store, wakes, typ, e, false)
		}
	}
	feed(toolscache.Added, rt.DeepCopy(), k.DeepCopy(), secret(im.KubeconfigSecretName(runtimeID)), secret("overrides-"+runtimeID))

	if n := len(store.runtimes); n != 1 {
		t.Fatalf("the watch holds %d records for one runtime's objects, want 1", n)
	}
	r := store.runtimes[runtimeID]
	if r.id != runtimeID || r.has != hasRuntime|hasKyma|hasKubeconfig || r.rt.instance != rt.Labels[controlplane.LabelInstanceID] {
		t.Errorf("the record holds runtime %q, parts %b, instance %q", r.id, r.has, r.rt.instance)
	}

	key := client.ObjectKey{Namespace: ns, Name: runtimeID}
	var gotRT im.Runtime
	if !store.seen(key, &gotRT) {
		t.Fatal("the Runtime CR is not seen")
	}
	if im.Fingerprint(gotRT.Status.Conditions) != im.Fingerprint(rt.Status.Conditions) || im.Explain(gotRT.Status) != im.Explain(rt.Status) ||
		gotRT.Status.State != im.StateReady {
		t.Errorf("the seen Runtime's status %+v reads differently from the served %+v", gotRT.Status, rt.Status)
	}
	if !reflect.DeepEqual(gotRT.Spec, im.RuntimeSpec{}) || len(gotRT.Labels) != 2 || gotRT.Annotations != nil || gotRT.Finalizers != nil ||
		gotRT.ManagedFields != nil || gotRT.DeletionTimestamp != nil {
		t.Errorf("the seen Runtime holds more than the steps read: %+v", gotRT.ObjectMeta)
	}
	var gotKyma kyma.Kyma
	if !store.seen(key, &gotKyma) || !reflect.DeepEqual(kyma.HealthOf(&gotKyma), kyma.HealthOf(k)) || gotKyma.ResourceVersion != "42" {
		t.Errorf("the seen Kyma CR's health %+v (version %s), want %+v (42)", kyma.HealthOf(&gotKyma), gotKyma.ResourceVersion, kyma.HealthOf(k))
	}
	kubeconfig := secret("")
	if !store.seen(client.ObjectKey{Namespace: ns, Name: im.KubeconfigSecretName(runtimeID)}, kubeconfig) ||
		kubeconfig.Labels[controlplane.LabelRuntimeID] != runtimeID {
		t.Errorf("the kubeconfig Secret is not seen as the runtime's: %+v", kubeconfig.ObjectMeta)
	}
	if store.seen(client.ObjectKey{Namespace: ns, Name: "overrides-" + runtimeID}, secret("")) {
		t.Error("the watch holds the runtime's overrides Secret; it reads only whether the kubeconfig exists")
	}
	if store.seen(key, &corev1.ConfigMap{}) || store.seen(client.ObjectKey{Namespace: "other", Name: runtimeID}, &im.Runtime{}) {
		t.Error("the watch claims a kind or namespace it does not watch")
	}
	var byInstance im.RuntimeList
	if !store.list(&byInstance, client.InNamespace(ns), client.MatchingLabels{controlplane.LabelInstanceID: rt.Labels[controlplane.LabelInstanceID]}) ||
		len(byInstance.Items) != 1 || byInstance.Items[0].Labels[controlplane.LabelRuntimeID] != runtimeID {
		t.Errorf("listing by instance label gave %+v", byInstance.Items)
	}
	if !store.list(&byInstance, client.MatchingLabels{controlplane.LabelInstanceID: "another"}) || len(byInstance.Items) != 0 {
		t.Errorf("listing another instance's Runtime CRs gave %d", len(byInstance.Items))
	}

	// Deleting: marked, then gone.
	deleting := rt.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	feed(toolscache.Updated, deleting)
	if !store.seen(key, &gotRT) || gotRT.DeletionTimestamp == nil || !gotRT.DeletionTimestamp.Equal(&metav1.Time{Time: t0}) {
		t.Errorf("the Runtime CR's deletion is not seen: %v", gotRT.DeletionTimestamp)
	}
	feed(toolscache.Deleted, deleting, k.DeepCopy(), secret("overrides-"+runtimeID))
	if store.seen(key, &gotRT) || store.seen(key, &gotKyma) {
		t.Error("deleted CRs are still seen")
	}
	feed(toolscache.Deleted, secret(im.KubeconfigSecretName(runtimeID)))
	if n := len(store.runtimes); n != 0 {
		t.Errorf("the watch holds %d records after the runtime's objects were deleted", n)
	}
	// The Ready Runtime CR, the kubeconfig Secret (its Runtime Ready), the
	// btp-operator module installed, and the four deletions; not the
	// overrides Secret's arrival, nor the deletion mark.
	if got := len(wakes.ids); got != 7 {
		t.Errorf("%d wake-ups queued, want 7: %v", got, wakes.ids)
	}
}

// TestARelistForgetsWhatWasDeletedMeanwhile: when a watch was lost and its
// reflector lists again, the kind's store compares the new list with what
// the watch holds of the kind and forgets what is missing, and the deletion
// wakes its operation, as any deletion does.
func TestARelistForgetsWhatWasDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	const ns = "kcp-system"
	store := newSeenStore(ns)
	w := NewWatcher(nil, nil, ns, nil, nil, logrus.New())
	wakes := &wakeQueue{signal: make(chan struct{}, 1)}
	runtime := func(id string) any {
		rt := runtimetest.Runtime(ns, id)
		rt.Status.State = im.StatePending
		return served(t, rt)
	}
	kubeconfig := func(id string) *metav1.PartialObjectMetadata {
		s := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: im.KubeconfigSecretName(id),
			Labels: map[string]string{controlplane.LabelRuntimeID: id}}}
		s.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return s
	}
	runtimes := &kindStore{w: w, store: store, wakes: wakes, part: hasRuntime}
	secrets := &kindStore{w: w, store: store, wakes: wakes, part: hasKubeconfig}
	list := func(k *kindStore, objs ...any) {
		t.Helper()
		if err := k.Replace(objs, "1"); err != nil {
			t.Fatal(err)
		}
	}
	list(runtimes, runtime("rt-1"), runtime("rt-2"))
	list(secrets, served(t, kubeconfig("rt-1")), served(t, kubeconfig("rt-2")), served(t, kubeconfig("rt-3")))
	if !runtimes.synced.Load() || !secrets.synced.Load() {
		t.Error("a first list leaves its kind unsynced")
	}
	wakes.ids = nil // the kubeconfig Secrets' arrival: not what this test is about

	// While the watch was down, rt-2's Runtime CR and Secret were deleted.
	list(runtimes, runtime("rt-1"))
	list(secrets, served(t, kubeconfig("rt-1")), served(t, kubeconfig("rt-3")))
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	if !store.seen(key("rt-1"), &im.Runtime{}) || !store.seen(key(im.KubeconfigSecretName("rt-1")), kubeconfig("")) ||
		!store.seen(key(im.KubeconfigSecretName("rt-3")), kubeconfig("")) {
		t.Error("the relist lost objects that are still there")
	}
	if store.seen(key("rt-2"), &im.Runtime{}) || store.seen(key(im.KubeconfigSecretName("rt-2")), kubeconfig("")) {
		t.Error("the watch still holds rt-2's objects, deleted while it was down")
	}
	if _, ok := store.runtimes["rt-2"]; ok {
		t.Error("rt-2's record outlived its objects")
	}
	if !reflect.DeepEqual(wakes.ids, []string{"rt-2", "rt-2"}) {
		t.Errorf("wake-ups %v, want rt-2's two deletions", wakes.ids)
	}
}

// TestAListAppliesEachObjectAsItIsDecoded: a kind's list hands each object
// to the watch's store as it decodes it (nothing holds the list), and its
// end (Replace) forgets what the list lacked; a list that failed part way
// and started over counts only what the new attempt listed.
func TestAListAppliesEachObjectAsItIsDecoded(t *testing.T) {
	t.Parallel()
	const ns = "kcp-system"
	store := newSeenStore(ns)
	w := NewWatcher(nil, nil, ns, nil, nil, logrus.New())
	wakes := &wakeQueue{signal: make(chan struct{}, 1)}
	runtimes := &kindStore{w: w, store: store, wakes: wakes, part: hasRuntime}
	page := func(ids ...string) string {
		var items []string
		for _, id := range ids {
			items = append(items, `{"metadata":{"name":"`+id+`","namespace":"kcp-system","labels":{"kyma-project.io/runtime-id":"`+id+
				`"}},"spec":{"shoot":{"name":"c"}},"status":{"state":"Pending"}}`)
		}
		return `{"kind":"RuntimeList","metadata":{"resourceVersion":"3"},"items":[` + strings.Join(items, ",") + `]}`
	}
	list := func(ids ...string) {
		t.Helper()
		l, err := decodeList(strings.NewReader(page(ids...)), watchedKinds()[0].newObject, runtimes.listed)
		if err != nil || len(l.Items) != 0 || l.ResourceVersion != "3" {
			t.Fatalf("a list handed to the store decodes to %+v, %v", l, err)
		}
	}
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

	runtimes.beginList()
	list("rt-1")
	if !store.seen(key("rt-1"), &im.Runtime{}) {
		t.Error("a listed object is not in the store before its list ended")
	}
	list("rt-2") // the next page
	if err := runtimes.Replace(nil, "3"); err != nil {
		t.Fatal(err)
	}
	if !runtimes.synced.Load() || !store.seen(key("rt-1"), &im.Runtime{}) || !store.seen(key("rt-2"), &im.Runtime{}) {
		t.Fatal("the first list's objects are not held once it ended")
	}

	// A relist that fails after rt-2, then lists again without it (deleted
	// meanwhile).
	runtimes.beginList()
	list("rt-2")
	runtimes.beginList()
	list("rt-1")
	if err := runtimes.Replace(nil, "4"); err != nil {
		t.Fatal(err)
	}
	if store.seen(key("rt-2"), &im.Runtime{}) || !store.seen(key("rt-1"), &im.Runtime{}) {
		t.Error("the relist kept rt-2, which its last attempt lacked, or lost rt-1")
	}
	if !reflect.DeepEqual(wakes.ids, []string{"rt-2"}) {
		t.Errorf("wake-ups %v, want rt-2's deletion", wakes.ids)
	}
}
