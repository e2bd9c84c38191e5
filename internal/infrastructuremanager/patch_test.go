package infrastructuremanager

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/testing/k8stest"
)

// TestPatchChangesOnlyItsFields: a patch sets the fields it names (a label,
// a worker pool's machine type and autoscaler bound, the administrators) and
// leaves everything else as it was, fields of pools and objects it merges
// into included; a patch that changes nothing writes nothing.
func TestPatchChangesOnlyItsFields(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := kcpClient(t)
	k8stest.EnsureNamespace(t, c, "types-patch")
	rt := fullRuntime("types-patch", "patched")
	if err := c.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	before := rt.DeepCopy()
	f := Fields{}
	for _, set := range []struct {
		value any
		path  []string
	}{
		{map[string]string{"kyma-project.io/broker-plan-name": "aws"}, []string{"metadata", "labels"}},
		{[]any{map[string]any{"name": KymaWorkerName, "machine": map[string]any{"type": "m6i.xlarge"}, "maximum": 8}},
			[]string{"spec", "shoot", "provider", "workers"}},
		{[]string{"new@example.com"}, []string{"spec", "security", "administrators"}},
		{map[string]any{"clientID": "new-cid", "usernameClaim": nil}, []string{"spec", "shoot", "kubernetes", "kubeAPIServer", "oidcConfig"}},
	} {
		if err := f.Set(set.value, set.path...); err != nil {
			t.Fatal(err)
		}
	}
	got, changed, err := Patch(ctx, c, client.ObjectKeyFromObject(rt), f)
	if err != nil || !changed || got.Generation != before.Generation+1 {
		t.Fatalf("Patch: changed %v, generation %d (was %d), %v", changed, got.Generation, before.Generation, err)
	}
	want := before.DeepCopy()
	want.Labels["kyma-project.io/broker-plan-name"] = "aws"
	w := &want.Spec.Shoot.Provider.Workers[0]
	w.Machine.Type, w.Maximum = "m6i.xlarge", 8
	want.Spec.Security.Administrators = []string{"new@example.com"}
	want.Spec.Shoot.Kubernetes.KubeAPIServer.OIDCConfig.ClientID = ptr("new-cid")
	want.Spec.Shoot.Kubernetes.KubeAPIServer.OIDCConfig.UsernameClaim = nil
	stored := &Runtime{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rt), stored); err != nil {
		t.Fatal(err)
	}
	if g, w := mustJSON(t, stored.Spec), mustJSON(t, want.Spec); g != w {
		t.Errorf("spec after the patch:\n got %s\nwant %s", g, w)
	}
	if g, w := mustJSON(t, stored.Labels), mustJSON(t, want.Labels); g != w {
		t.Errorf("labels after the patch: %s, want %s", g, w)
	}
	if fm := stored.ManagedFields; len(fm) == 0 || fm[len(fm)-1].Manager != FieldManager {
		t.Errorf("managed fields %+v: the patch is not keb's", fm)
	}

	again, changed, err := Patch(ctx, c, client.ObjectKeyFromObject(rt), f)
	if err != nil || changed || again.ResourceVersion != stored.ResourceVersion {
		t.Fatalf("the same patch again: changed %v, resourceVersion %s (was %s), %v", changed, again.ResourceVersion, stored.ResourceVersion, err)
	}

	// A new pool is added at the end, not in place of the Kyma pool.
	added := Fields{}
	if err := added.Set([]any{map[string]any{"name": "cpu-worker-1", "machine": map[string]any{"type": "m6i.large"}, "minimum": 1, "maximum": 2}},
		"spec", "shoot", "provider", "additionalWorkers"); err != nil {
		t.Fatal(err)
	}
	got, _, err = Patch(ctx, c, client.ObjectKeyFromObject(rt), added)
	if err != nil {
		t.Fatal(err)
	}
	if pools := *got.Spec.Shoot.Provider.AdditionalWorkers; len(pools) != 2 || pools[0].Name != "extra" || pools[1].Name != "cpu-worker-1" {
		t.Errorf("additional pools after adding one: %+v", pools)
	}
}

// staleReader lets another writer change the Runtime between Patch's read
// and its write.
type staleReader struct {
	client.Client
	between func()
}

func (s staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := s.Client.Get(ctx, key, obj, opts...)
	s.between()
	return err
}

// TestPatchRefusesAStaleRead: a patch computed from a read that another
// writer overtook fails with a conflict instead of writing over the other
// change (a step's error: it runs again on a fresh read).
func TestPatchRefusesAStaleRead(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := kcpClient(t)
	k8stest.EnsureNamespace(t, c, "types-patch-stale")
	rt := fullRuntime("types-patch-stale", "stale")
	if err := c.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	other := func() {
		cur := &Runtime{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rt), cur); err != nil {
			t.Error(err)
			return
		}
		cur.Spec.Shoot.Provider.Workers[0].Maximum = 5
		if err := c.Update(ctx, cur); err != nil {
			t.Error(err)
		}
	}
	f := Fields{}
	if err := f.Set([]string{"late@example.com"}, "spec", "security", "administrators"); err != nil {
		t.Fatal(err)
	}
	_, _, err := Patch(ctx, staleReader{Client: c, between: other}, client.ObjectKeyFromObject(rt), f)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "patching Runtime CR") {
		t.Fatalf("patching over a concurrent write: %v, want a conflict", err)
	}
}

func TestDiffAddsNoRemovals(t *testing.T) {
	t.Parallel()
	ops := diff(map[string]any{"spec": map[string]any{}},
		map[string]any{"spec": map[string]any{"oidc": map[string]any{"clientID": "c", "groupsClaim": nil}}}, "")
	if len(ops) != 1 || ops[0].Op != "add" || mustJSON(t, ops[0].Value) != `{"clientID":"c"}` {
		t.Fatalf("ops %+v", ops)
	}
}

func TestDiffEscapesLabelKeys(t *testing.T) {
	t.Parallel()
	ops := diff(map[string]any{"metadata": map[string]any{"labels": map[string]any{}}},
		map[string]any{"metadata": map[string]any{"labels": map[string]any{"kyma-project.io/a~b": "x"}}}, "")
	if len(ops) != 1 || ops[0].Path != "/metadata/labels/kyma-project.io~1a~0b" || ops[0].Op != "add" {
		t.Fatalf("ops %+v", ops)
	}
}

// TestDiffAddsNothingOfOnlyRemovals: removing a field below one that does
// not exist adds nothing (an empty object could break the CRD's required
// fields: a cri without name).
func TestDiffAddsNothingOfOnlyRemovals(t *testing.T) {
	t.Parallel()
	ops := diff(map[string]any{"spec": map[string]any{}},
		map[string]any{"spec": map[string]any{"cri": map[string]any{"containerRuntimes": nil}}}, "")
	if len(ops) != 0 {
		t.Fatalf("ops %+v", ops)
	}
}

// TestDiffReplacesWhole: a value set with SetWhole replaces a list of named
// objects as a whole, dropping the entries it does not list.
func TestDiffReplacesWhole(t *testing.T) {
	t.Parallel()
	f := Fields{}
	if err := f.SetWhole([]map[string]any{{"name": "b"}}, "spec", "pools"); err != nil {
		t.Fatal(err)
	}
	ops := diff(map[string]any{"spec": map[string]any{"pools": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "x": 1.0}}}}, f, "")
	if len(ops) != 1 || ops[0].Op != "replace" || ops[0].Path != "/spec/pools" || mustJSON(t, ops[0].Value) != `[{"name":"b"}]` {
		t.Fatalf("ops %+v", ops)
	}
	if ops := diff(map[string]any{"spec": map[string]any{"pools": []any{map[string]any{"name": "b"}}}}, f, ""); len(ops) != 0 {
		t.Fatalf("an equal list was written again: %+v", ops)
	}
}
