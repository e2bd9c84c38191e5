package deprovisioning_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/runtimeclient"
)

// btpFinalizer is the SAP BTP service operator's finalizer, which nobody
// removes in these tests: the subaccount is gone.
const btpFinalizer = "services.cloud.sap.com/sap-btp-finalizer"

// installBTPServiceCRDs serves the BTP service operator's kinds (their
// schemas left open: the step only lists, deletes and patches metadata).
func installBTPServiceCRDs(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	open := true
	for _, kind := range []string{"ServiceBinding", "ServiceInstance"} {
		plural := strings.ToLower(kind) + "s"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".services.cloud.sap.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "services.cloud.sap.com", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural,
					Singular: strings.ToLower(kind)},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &open}}}},
			},
		}
		if err := c.Create(t.Context(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// A fresh client discovers the new kinds; wait until they are served.
	rc, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("services.cloud.sap.com/v1")
		l.SetKind("ServiceInstanceList")
		err := rc.List(t.Context(), l)
		if err == nil {
			return rc
		}
		if time.Now().After(deadline) {
			t.Fatalf("BTP service kinds not served: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
		rc, _ = client.New(env.Config, client.Options{})
	}
}

func btpObject(ns, kind, name string, finalizer bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("services.cloud.sap.com/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	if finalizer {
		u.SetFinalizers([]string{btpFinalizer})
	}
	return u
}

// TestSoftDeleteBTPServices: a deprovisioning of a deleted subaccount's
// runtime deletes its ServiceBindings, then its ServiceInstances, and
// strips the finalizers nobody removes once FinalizerGrace has passed; one
// a DELETE started touches nothing; no runtime, nothing to do.
func TestSoftDeleteBTPServices(t *testing.T) {
	t.Parallel()
	rc := installBTPServiceCRDs(t)
	ns := newNamespace(t)
	objs := []*unstructured.Unstructured{
		btpObject(ns, "ServiceBinding", "binding-stuck", true),
		btpObject(ns, "ServiceInstance", "instance-stuck", true),
		btpObject(ns, "ServiceInstance", "instance-free", false),
	}
	for _, o := range objs {
		if err := rc.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(ns)
	cfg.FinalizerGrace, cfg.SkipAfter = time.Minute, 5*time.Minute
	step := &deprovisioning.SoftDeleteBTPServices{Runtimes: &processtest.RuntimeClients{Runtime: rc}, Config: cfg}
	state := func(o *unstructured.Unstructured) (exists, deleting bool) {
		t.Helper()
		got := o.DeepCopy()
		err := rc.Get(t.Context(), client.ObjectKeyFromObject(o), got)
		if apierrors.IsNotFound(err) {
			return false, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return true, got.GetDeletionTimestamp() != nil
	}

	// A DELETE's deprovisioning leaves BTP services to the BTP operator.
	op := newOp(t)
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "not a deleted subaccount", processtest.Done, res, err)
	if ok, deleting := state(objs[0]); !ok || deleting {
		t.Fatal("a DELETE's deprovisioning touched a ServiceBinding")
	}

	// The subaccount cleanup's: bindings first, waiting on the finalizer.
	op.Record.SubaccountDeleted = true
	now := time.Now()
	op.Record.StepStartedAt = map[string]time.Time{step.Name(): now}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "binding held", processtest.Retry, res, err)
	if !strings.Contains(op.Description, "1 ServiceBindings left") {
		t.Errorf("description %q", op.Description)
	}
	if ok, deleting := state(objs[0]); !ok || !deleting {
		t.Errorf("binding: exists %v, deleting %v; want held by its finalizer", ok, deleting)
	}
	if _, deleting := state(objs[1]); deleting {
		t.Error("an instance was deleted before its bindings were gone")
	}

	// Past the grace: finalizers stripped, bindings then instances gone.
	op.Record.StepStartedAt[step.Name()] = now.Add(-2 * time.Minute)
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "past the grace", processtest.Done, res, err)
	for _, o := range objs {
		if ok, _ := state(o); ok {
			t.Errorf("%s %s still there", o.GetKind(), o.GetName())
		}
	}

	// The runtime is gone already: done.
	step.Runtimes = &processtest.RuntimeClients{Err: errors.Join(runtimeclient.ErrKubeconfigNotFound)}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "no runtime", processtest.Done, res, err)
}

var _ process.SkippableStep = (*deprovisioning.SoftDeleteBTPServices)(nil)
