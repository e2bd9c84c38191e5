package hyperscaler

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/gardener/security"
)

// AccountObjects are the objects that make one pool account of kind named name in namespace, with
// labels on the pool object: a Secret holding credentials, and (unless kind is KindSecret, whose
// Secret carries the labels) the binding pointing at it, of provider type provider. The dev stack
// seeds its pool with them and the tests fill theirs; an operator's tooling creates the same.
func AccountObjects(kind Kind, namespace, name, provider string, labels map[string]string, credentials map[string]string) []client.Object {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		StringData: credentials,
	}
	switch kind {
	case KindSecret:
		secret.Labels = labels
		return []client.Object{secret}
	case KindSecretBinding:
		return []client.Object{secret, &core.SecretBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			SecretRef:  core.SecretReference{Name: name, Namespace: namespace},
			Provider:   &core.SecretBindingProvider{Type: provider},
		}}
	default:
		return []client.Object{secret, &security.CredentialsBinding{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			Provider:       security.Provider{Type: provider},
			CredentialsRef: security.CredentialsReference{APIVersion: "v1", Kind: "Secret", Name: name, Namespace: namespace},
		}}
	}
}

// ProviderOf is the provider part of a hyperscalerType value (gcp of gcp_cf-sa30).
func ProviderOf(hyperscalerType string) string {
	for i, r := range hyperscalerType {
		if r == '_' {
			return hyperscalerType[:i]
		}
	}
	return hyperscalerType
}
