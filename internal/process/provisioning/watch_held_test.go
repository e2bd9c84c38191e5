package provisioning_test

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
)

// TestTheWatchKeepsOnlyWhatKebReads runs the control-plane watch against a
// namespace holding a runtime's three objects (Runtime CR, Kyma CR,
// kubeconfig Secret) next to objects of the same kinds that belong to no
// runtime, and checks what it holds, since that grows with the fleet
// (docs/performance.md, "Fleet scale"): only the runtime's objects (the
// lists and watches are label-selected by the runtime ID), the Secret as
// metadata only, and of each object nothing keb does not read: no managed
// fields, annotations, finalizers or spec, only the runtime and instance
// labels. What one runtime's record holds, and that it is one, is
// process.TestTheWatchHoldsOneCompactRecordPerRuntime.
func TestTheWatchKeepsOnlyWhatKebReads(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	c := kcpClient(t)
	watcher := runWatcher(t, env.Config, ns)

	// Objects of no runtime first: each kind's events arrive in order, so
	// once the watch shows the runtime's objects it has had these.
	for _, name := range []string{"overrides", "credentials", "unrelated"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "other"}},
			StringData: map[string]string{"k": "v"}}
		if err := c.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	stray := runtimetest.Runtime(ns, "stray-runtime")
	delete(stray.Labels, controlplane.LabelRuntimeID)
	if err := c.Create(t.Context(), stray); err != nil {
		t.Fatal(err)
	}
	strayKyma := kyma.NewKyma(kyma.KymaInput{RuntimeID: "stray-kyma", InstanceID: "i"}, kyma.Settings{ShootDomain: "example.com"})
	strayKyma.Namespace = ns
	delete(strayKyma.Labels, controlplane.LabelRuntimeID)
	if err := c.Create(t.Context(), strayKyma); err != nil {
		t.Fatal(err)
	}

	// The runtime's objects, as the infrastructure manager, keb and
	// Lifecycle Manager leave them.
	op := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure"})
	runtimeID := op.Instance.RuntimeID
	createRuntimeCR(t, ns, op, infrastructuremanager.StateReady, "")
	rt := &infrastructuremanager.Runtime{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: kyma.Name(runtimeID)}, rt); err != nil {
		t.Fatal(err)
	}
	rt.Annotations = map[string]string{"operator.kyma-project.io/note": "kept out of memory"}
	rt.Finalizers = []string{infrastructuremanager.Finalizer}
	if err := c.Update(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	createKubeconfigSecret(t, ns, runtimeID)
	k := createKymaCR(t, ns, op)

	var runtimes infrastructuremanager.RuntimeList
	var kymas kyma.KymaList
	secrets := &metav1.PartialObjectMetadataList{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	deadline := time.Now().Add(time.Minute)
	for {
		ok := watcher.SeenList(t.Context(), &runtimes, client.InNamespace(ns)) &&
			watcher.SeenList(t.Context(), &kymas, client.InNamespace(ns)) &&
			watcher.SeenList(t.Context(), secrets, client.InNamespace(ns))
		if ok && hasName(runtimes.Items, rt.Name) && hasName(kymas.Items, k.Name) &&
			hasName(secrets.Items, infrastructuremanager.KubeconfigSecretName(runtimeID)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch did not show the runtime's objects within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Label-selected: nothing of no runtime is held.
	if len(runtimes.Items) != 1 || len(kymas.Items) != 1 || len(secrets.Items) != 1 {
		t.Fatalf("the watch holds %d Runtime CRs, %d Kyma CRs, %d Secrets; want only the runtime's one of each",
			len(runtimes.Items), len(kymas.Items), len(secrets.Items))
	}
	// Metadata only: the watch holds no Secret's data.
	if watcher.Seen(t.Context(), client.ObjectKey{Namespace: ns, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)}, &corev1.Secret{}) {
		t.Error("the watch holds whole Secrets; it should hold their metadata only")
	}
	wantLabels := []string{controlplane.LabelInstanceID, controlplane.LabelRuntimeID}
	for _, obj := range []client.Object{&runtimes.Items[0], &kymas.Items[0], &secrets.Items[0]} {
		kind := reflect.TypeOf(obj).Elem().Name()
		if len(obj.GetManagedFields()) != 0 || len(obj.GetAnnotations()) != 0 || len(obj.GetFinalizers()) != 0 {
			t.Errorf("the watch's %s keeps managed fields, annotations or finalizers: %v, %v, %v", kind,
				obj.GetManagedFields(), obj.GetAnnotations(), obj.GetFinalizers())
		}
		if got := slices.Sorted(maps.Keys(obj.GetLabels())); len(got) > len(wantLabels) || obj.GetLabels()[controlplane.LabelRuntimeID] != runtimeID {
			t.Errorf("the watch's %s keeps labels %v; want the runtime ID %s and at most %v", kind, got, runtimeID, wantLabels)
		}
	}
	got := runtimes.Items[0]
	if !reflect.DeepEqual(got.Spec, infrastructuremanager.RuntimeSpec{}) {
		t.Errorf("the watch keeps the Runtime CR's spec: %+v", got.Spec)
	}
	if got.Status.State != infrastructuremanager.StateReady || len(got.Status.Conditions) == 0 ||
		got.Labels[controlplane.LabelInstanceID] != rt.Labels[controlplane.LabelInstanceID] {
		t.Errorf("the watch lost what the steps read: status %+v, labels %v", got.Status, got.Labels)
	}
	if gotKyma := kymas.Items[0]; !reflect.DeepEqual(gotKyma.Spec, kyma.KymaSpec{}) {
		t.Errorf("the watch keeps the Kyma CR's spec: %+v", gotKyma.Spec)
	}
}

func hasName[T any, P interface {
	*T
	client.Object
}](items []T, name string) bool {
	for i := range items {
		if P(&items[i]).GetName() == name {
			return true
		}
	}
	return false
}

// TestTheWatchStreamsItsFirstLists starts the control-plane watch on a
// namespace that already holds a runtime's three objects and checks how it
// asked the API server for them: each kind's first list as a watch that
// begins with the kind's objects (sendInitialEvents), label-selected, never
// as a LIST, which at 100,000 runtimes did not end within the API server's
// request timeout (docs/performance.md, "Fleet scale"); and that the
// objects so listed are the watch's.
func TestTheWatchStreamsItsFirstLists(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	op := initializedOp(t, catalog.AzurePlanID, "", process.Record{Provider: "azure"})
	runtimeID := op.Instance.RuntimeID
	createRuntimeCR(t, ns, op, infrastructuremanager.StateReady, "")
	createKubeconfigSecret(t, ns, runtimeID)
	createKymaCR(t, ns, op)

	var mu sync.Mutex
	var asked []*url.URL
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.Contains(r.URL.Path, "/namespaces/"+ns+"/") {
				mu.Lock()
				asked = append(asked, r.URL)
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	watcher := runWatcher(t, cfg, ns)

	deadline := time.Now().Add(time.Minute)
	for !watcher.State().Running {
		if time.Now().After(deadline) {
			t.Fatalf("the watch did not run within a minute: %+v", watcher.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Running means every kind's first list is applied: the objects that
	// were there before are the watch's now.
	for _, obj := range []client.Object{&infrastructuremanager.Runtime{}, &kyma.Kyma{}} {
		name := kyma.Name(runtimeID)
		if !watcher.Seen(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj) {
			t.Errorf("the watch, running, does not hold the %T %s that was there before it started", obj, name)
		}
	}
	var secrets metav1.PartialObjectMetadataList
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if !watcher.SeenList(t.Context(), &secrets, client.InNamespace(ns)) ||
		!hasName(secrets.Items, infrastructuremanager.KubeconfigSecretName(runtimeID)) {
		t.Errorf("the watch, running, does not hold the kubeconfig Secret that was there before it started: %v", secrets.Items)
	}

	mu.Lock()
	defer mu.Unlock()
	first := map[string]url.Values{}
	for _, u := range asked {
		resource := u.Path[strings.LastIndex(u.Path, "/")+1:]
		q := u.Query()
		if q.Get("watch") != "true" {
			t.Errorf("the watch asked for a LIST: %s", u)
		}
		if q.Get("labelSelector") != controlplane.LabelRuntimeID {
			t.Errorf("the watch asked for %s without selecting the runtime-ID label", u)
		}
		if _, ok := first[resource]; !ok {
			first[resource] = q
		}
	}
	for _, resource := range []string{"runtimes", "kymas", "secrets"} {
		q, ok := first[resource]
		if !ok || q.Get("sendInitialEvents") != "true" || q.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) ||
			q.Get("allowWatchBookmarks") != "true" {
			t.Errorf("the first list of %s was not a watch beginning with the objects: %v", resource, q)
		}
	}
}

// runWatcher runs the control-plane watch of namespace ns against cfg's API
// server until the test ends.
func runWatcher(t *testing.T, cfg *rest.Config, ns string) *process.Watcher {
	t.Helper()
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	watcher := process.NewWatcher(cfg, scheme, ns, noWakes{}, noWakes{}, logrus.New())
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); watcher.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return watcher
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
