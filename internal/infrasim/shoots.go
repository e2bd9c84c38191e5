package infrasim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/gardener/security"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// Gardener is the Gardener project the simulated infrastructure manager creates Shoots in, as the
// real one does: a Runtime's spec.shoot.secretBindingName must name a binding of the project, and
// its cluster comes with a Shoot (core.gardener.cloud/v1beta1) referencing that binding, deleted
// with the Runtime. keb's account release reads those Shoots.
type Gardener struct {
	// Namespace is the project namespace (garden-<project>).
	Namespace string
	// Binding is the kind of the project's bindings: CredentialsBinding (default, referenced by a
	// Shoot's spec.credentialsBindingName) or SecretBinding (spec.secretBindingName).
	Binding schema.GroupVersionKind
}

func (g *Gardener) bindingGVK() schema.GroupVersionKind {
	if g.Binding.Kind == "" {
		return security.GroupVersion.WithKind("CredentialsBinding")
	}
	return g.Binding
}

// bindingMissing is why Gardener would refuse rt's Shoot: its binding does not exist ("" when it
// does, or when the Shoot was created already: a binding deleted later does not fail a cluster).
func (r *reconciler) bindingMissing(ctx context.Context, rt *im.Runtime, p *progress) (string, error) {
	r.mu.Lock()
	created := p.applied != 0
	r.mu.Unlock()
	if r.gardener == nil || created || rt.Status.ProvisioningCompleted {
		return "", nil
	}
	gvk := r.gardener.bindingGVK()
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(gvk)
	name := rt.Spec.Shoot.SecretBindingName
	err := r.reader.Get(ctx, client.ObjectKey{Namespace: r.gardener.Namespace, Name: name}, o)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("Shoot %s cannot be created: %s %q not found in %s", rt.Spec.Shoot.Name, gvk.Kind, name, r.gardener.Namespace), nil
	case err != nil:
		return "", fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, r.gardener.Namespace, name, err)
	}
	return "", nil
}

// ensureShoot creates rt's Shoot in the project, referencing its binding.
func (r *reconciler) ensureShoot(ctx context.Context, rt *im.Runtime) error {
	if r.gardener == nil {
		return nil
	}
	s := &core.Shoot{
		ObjectMeta: metav1.ObjectMeta{Name: rt.Spec.Shoot.Name, Namespace: r.gardener.Namespace,
			Labels: map[string]string{"kyma-project.io/runtime-id": rt.RuntimeID()}},
		Spec: core.ShootSpec{Region: rt.Spec.Shoot.Region, Provider: core.ShootProvider{Type: rt.Spec.Shoot.Provider.Type}},
	}
	if r.gardener.bindingGVK().Kind == "CredentialsBinding" {
		s.Spec.CredentialsBindingName = ptr.To(rt.Spec.Shoot.SecretBindingName)
	} else {
		s.Spec.SecretBindingName = ptr.To(rt.Spec.Shoot.SecretBindingName)
	}
	if err := r.client.Create(ctx, s); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating Shoot %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// deleteShoot deletes rt's Shoot (a simulated Shoot has no finalizers: it is gone at once).
func (r *reconciler) deleteShoot(ctx context.Context, rt *im.Runtime) error {
	if r.gardener == nil {
		return nil
	}
	s := &core.Shoot{ObjectMeta: metav1.ObjectMeta{Name: rt.Spec.Shoot.Name, Namespace: r.gardener.Namespace}}
	if err := client.IgnoreNotFound(r.client.Delete(ctx, s)); err != nil {
		return fmt.Errorf("deleting Shoot %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
