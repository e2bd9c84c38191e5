package infrasim

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// As the infrastructure manager on Gardener: a Runtime naming no binding of the project fails
// (and is served once the binding exists), a served one comes with a Shoot referencing its
// binding, and the Shoot goes with the Runtime.
func TestShootsAndBindings(t *testing.T) {
	t.Parallel()
	c := env.Client(t, k8stest.Scheme(t, infrastructuremanager.AddToScheme, core.AddToScheme, security.AddToScheme))
	ns, project := unique("kcp"), unique("garden-p")
	createNamespace(t, c, ns)
	createNamespace(t, c, project)
	startSimulator(t, ns, Options{Mode: ModeShared, Gardener: &Gardener{Namespace: project}})

	name := unique("rt")
	rt := newRuntime(ns, name, "id-"+name)
	if err := c.Create(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rt)
	failed := waitForState(t, c, key, infrastructuremanager.StateFailed)
	if cond := infrastructuremanager.Newest(failed.Status.Conditions); cond == nil || cond.Reason != infrastructuremanager.ReasonGardenerError ||
		!strings.Contains(cond.Message, `CredentialsBinding "sb-azure" not found`) {
		t.Fatalf("Runtime naming no binding: %+v", failed.Status)
	}

	binding := &security.CredentialsBinding{ObjectMeta: metav1.ObjectMeta{Name: "sb-azure", Namespace: project},
		Provider: security.Provider{Type: "azure"}, CredentialsRef: security.CredentialsReference{APIVersion: "v1", Kind: "Secret",
			Name: "sb-azure", Namespace: project}}
	if err := c.Create(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	waitForState(t, c, key, infrastructuremanager.StateReady)
	shoot := &core.Shoot{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: project, Name: rt.Spec.Shoot.Name}, shoot); err != nil ||
		shoot.BindingName() != "sb-azure" || shoot.Spec.SecretBindingName != nil || shoot.Spec.Region != "westeurope" {
		t.Fatalf("Shoot of the runtime: %v %+v", err, shoot.Spec)
	}

	if err := c.Delete(t.Context(), rt); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Runtime and its Shoot gone", func() (bool, error) {
		rtErr := c.Get(t.Context(), key, &infrastructuremanager.Runtime{})
		shootErr := c.Get(t.Context(), client.ObjectKeyFromObject(shoot), &core.Shoot{})
		return apierrors.IsNotFound(rtErr) && apierrors.IsNotFound(shootErr), nil
	})
}
