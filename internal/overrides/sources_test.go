package overrides

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/testing/k8stest"
)

// noLists is a reader whose lists fail.
type noLists struct{ client.Reader }

func (noLists) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("listed from the API server")
}

// An override an operator adds or changes while keb runs reaches the runtimes provisioned after
// it, read from the watch; unlabelled ConfigMaps stay out.
func TestSourcesFollowOverrideChanges(t *testing.T) {
	t.Parallel()
	c, ns := setup(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "global", Labels: map[string]string{LabelOverride: labelTrue}},
			Data: map[string]string{"domain": "old.example.com"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}, Data: map[string]string{"domain": "wrong"}})
	// Once synced, lists never reach the API server: a direct list fails here.
	src, err := NewSources(env.Config, clientgoscheme.Scheme, ns, noLists{c})
	if err != nil {
		t.Fatal(err)
	}
	k8stest.StartWatch(t, src)
	ctx := t.Context()

	got, err := Resolve(ctx, src, ns, false)
	if err != nil || got.Global["domain"] != "old.example.com" {
		t.Fatalf("Resolve = %v, %v; want the labelled ConfigMap's domain", got.Global, err)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "global"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["domain"] = "new.example.com"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns, Labels: map[string]string{LabelOverride: labelTrue, LabelComponent: "istio"}},
		StringData: map[string]string{"replicas": "3"}}
	if err := c.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	for {
		got, err = Resolve(ctx, src, ns, false)
		if err != nil {
			t.Fatal(err)
		}
		if got.Global["domain"] == "new.example.com" && got.Components["istio"]["replicas"] == "3" {
			break
		}
		time.Sleep(10 * time.Millisecond) // the watch delivers the change; the test's deadline bounds the wait
	}
	if len(got.Global) != 1 {
		t.Errorf("Global = %v: an unlabelled ConfigMap was read", got.Global)
	}
}
