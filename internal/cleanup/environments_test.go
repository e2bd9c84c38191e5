package cleanup_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/cleanup"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/infrastructuremanager/runtimetest"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/storage"
)

const maxAge = 24 * time.Hour

// envFixture is a fixture with a namespace of its own on the control plane.
type envFixture struct {
	*fixture
	kcp client.Client
	ns  string
}

func newEnvFixture(t *testing.T) *envFixture {
	t.Helper()
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(kcp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	f := &envFixture{fixture: newFixture(t), kcp: c, ns: "env-" + uuid.NewString()[:8]}
	if err := c.Create(f.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// runtimeCR creates a Runtime CR with its Kyma CR and kubeconfig Secret, as
// a provisioning leaves them, and returns its creation time.
func (f *envFixture) runtimeCR(runtimeID, instanceID string, extra map[string]string) time.Time {
	f.t.Helper()
	rt := runtimetest.Runtime(f.ns, runtimeID)
	rt.Name = kyma.Name(runtimeID)
	delete(rt.Labels, "kyma-project.io/instance-id")
	if instanceID != "" {
		rt.Labels["kyma-project.io/instance-id"] = instanceID
	}
	for k, v := range extra {
		rt.Labels[k] = v
	}
	k := &kyma.Kyma{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: kyma.Name(runtimeID)}, Spec: kyma.KymaSpec{Channel: "regular"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: infrastructuremanager.KubeconfigSecretName(runtimeID)},
		Data: map[string][]byte{"config": []byte("kubeconfig")}}
	for _, o := range []client.Object{rt, k, sec} {
		if err := f.kcp.Create(f.ctx, o); err != nil {
			f.t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	return rt.CreationTimestamp.Time
}

// exists reports whether the runtime's Runtime CR, Kyma CR and kubeconfig
// Secret exist.
func (f *envFixture) exists(runtimeID string) [3]bool {
	f.t.Helper()
	var out [3]bool
	objs := []client.Object{&infrastructuremanager.Runtime{}, &kyma.Kyma{}, &corev1.Secret{}}
	names := []string{kyma.Name(runtimeID), kyma.Name(runtimeID), infrastructuremanager.KubeconfigSecretName(runtimeID)}
	for i, o := range objs {
		err := f.kcp.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: names[i]}, o)
		if err != nil && !apierrors.IsNotFound(err) {
			f.t.Fatal(err)
		}
		out[i] = err == nil
	}
	return out
}

func (f *envFixture) cleaner(maxPerRun int, now time.Time) *cleanup.EnvironmentsCleaner {
	sel, err := labels.Parse("owner.do-not-delete!=true")
	if err != nil {
		f.t.Fatal(err)
	}
	return cleanup.NewEnvironmentsCleaner(f.kcp, f.store, cleanup.EnvironmentsConfig{Namespace: f.ns, MaxAge: maxAge,
		Selector: sel, MaxPerRun: maxPerRun, Now: func() time.Time { return now }}, opTimeout, f.log)
}

// actions renders the decisions that act, in order.
func actions(rep cleanup.EnvironmentsReport) string {
	var s string
	for _, d := range rep.ToAct() {
		s += fmt.Sprintf("%s:%s:%s ", d.RuntimeID, d.Action, d.InstanceID)
	}
	return s
}

// seedEnvironments creates the runtimes of the environments tests and
// returns the time at which the young one is exactly maxAge old.
func (f *envFixture) seedEnvironments() time.Time {
	f.t.Helper()
	f.running("inst-old", "sa-1", "aaaa-old", time.Hour)
	f.running("inst-keep", "sa-1", "bbbb-keep", time.Hour)
	f.running("inst-busy", "sa-1", "cccc-busy", time.Hour)
	f.running("inst-young", "sa-1", "eeee-young", time.Hour)
	f.updating("inst-busy", "upd-busy")
	f.runtimeCR("aaaa-old", "inst-old", nil)
	f.runtimeCR("bbbb-keep", "inst-keep", map[string]string{"owner.do-not-delete": "true"})
	f.runtimeCR("cccc-busy", "inst-busy", nil)
	f.runtimeCR("dddd-orphan", "inst-gone", nil)
	// Creation times have a resolution of a second: the young runtime is
	// created in a later second than the others.
	time.Sleep(1100 * time.Millisecond)
	return f.runtimeCR("eeee-young", "inst-young", nil).Add(maxAge)
}

func TestEnvironmentsCleanup(t *testing.T) {
	t.Parallel()
	f := newEnvFixture(t)
	now := f.seedEnvironments()
	want := "aaaa-old:deprovision:inst-old dddd-orphan:delete orphan:inst-gone "

	// A dry run names what the real run acts on and changes nothing.
	dry, err := f.cleaner(20, now).Run(f.ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(dry); got != want {
		t.Fatalf("dry run acts on %q, want %q", got, want)
	}
	reasons := map[string]string{}
	for _, d := range dry.Decisions {
		reasons[d.RuntimeID] = d.Reason
	}
	for id, want := range map[string]string{
		"bbbb-keep":  `labels do not match the selector "owner.do-not-delete!=true"`,
		"cccc-busy":  "update operation upd-busy of instance inst-busy in progress",
		"eeee-young": "younger than the maximum age 24h0m0s",
	} {
		if reasons[id] != want {
			t.Errorf("%s kept because %q, want %q", id, reasons[id], want)
		}
	}
	if n, _ := f.deprovisionings("inst-old"); n != 0 || f.exists("dddd-orphan") != [3]bool{true, true, true} {
		t.Fatal("the dry run changed something")
	}

	rep, err := f.cleaner(20, now).Run(f.ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(rep); got != want || rep.Acted != 2 {
		t.Fatalf("run acted on %q (%d), want %q as the dry run said", got, rep.Acted, want)
	}
	// The instance's deprovisioning is the normal one: queued, the instance
	// deprovisioning; its CRs are the pipeline's to delete.
	if n, queued := f.deprovisionings("inst-old"); n != 1 || !queued || f.state("inst-old") != storage.RuntimeDeprovisioning {
		t.Fatalf("inst-old: %d deprovisionings, queued %v, state %s", n, queued, f.state("inst-old"))
	}
	if f.exists("aaaa-old") != [3]bool{true, true, true} {
		t.Fatal("the cleanup deleted the CRs of a runtime with an instance itself")
	}
	// The orphan's CRs and kubeconfig Secret are gone.
	if got := f.exists("dddd-orphan"); got != [3]bool{} {
		t.Fatalf("orphan: Runtime, Kyma, Secret exist = %v, want all gone", got)
	}
	for _, id := range []string{"inst-keep", "inst-busy", "inst-young"} {
		if n, _ := f.deprovisionings(id); n != 0 {
			t.Errorf("%s was deprovisioned", id)
		}
	}
	// The next pass keeps the deprovisioning runtime: an operation runs.
	again, err := f.cleaner(20, now).Run(f.ctx, false)
	if err != nil || actions(again) != "" {
		t.Fatalf("second run acts on %q, %v; want nothing", actions(again), err)
	}
}

func TestEnvironmentsCleanupMaxPerRunActsOnNone(t *testing.T) {
	t.Parallel()
	f := newEnvFixture(t)
	now := f.seedEnvironments()
	for _, dry := range []bool{true, false} {
		rep, err := f.cleaner(1, now).Run(f.ctx, dry)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Refused == "" || rep.Acted != 0 || len(rep.ToAct()) != 2 {
			t.Fatalf("dry %v: refused %q, acted %d, to act %d; want refused, none acted", dry, rep.Refused, rep.Acted, len(rep.ToAct()))
		}
	}
	if n, _ := f.deprovisionings("inst-old"); n != 0 || f.exists("dddd-orphan") != [3]bool{true, true, true} {
		t.Fatal("a refused pass changed something")
	}
	// The young runtime comes of age: three to act on, still refused at 2.
	if rep, _ := f.cleaner(2, now.Add(time.Second)).Run(f.ctx, false); rep.Refused == "" || len(rep.ToAct()) != 3 {
		t.Fatalf("refused %q with %d to act on; want refused with 3", rep.Refused, len(rep.ToAct()))
	}
}
