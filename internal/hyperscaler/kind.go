package hyperscaler

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/gardener/security"
)

// Kind is the kind of object a pool is made of: the object whose name a Runtime CR's
// spec.shoot.secretBindingName carries.
type Kind string

// Pool kinds.
const (
	// KindCredentialsBinding: Gardener CredentialsBindings (security.gardener.cloud/v1alpha1), as
	// upstream claims them today. The default.
	KindCredentialsBinding Kind = "CredentialsBinding"
	// KindSecretBinding: Gardener SecretBindings (core.gardener.cloud/v1beta1), of older landscapes.
	KindSecretBinding Kind = "SecretBinding"
	// KindSecret: labelled Secrets named like their SecretBindings, the pool of keb installs before
	// bindings; kept so that such an install keeps working until it migrates.
	KindSecret Kind = "Secret"
)

// Kinds lists the pool kinds, the default first.
var Kinds = []Kind{KindCredentialsBinding, KindSecretBinding, KindSecret}

// ParseKind reads a pool kind as configured (case-insensitive).
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if strings.EqualFold(strings.TrimSpace(s), string(k)) {
			return k, nil
		}
	}
	return "", fmt.Errorf("account pool kind %q: want one of %s, %s, %s", s, KindCredentialsBinding, KindSecretBinding, KindSecret)
}

// GroupVersionKind is the API kind of the pool's objects.
func (k Kind) GroupVersionKind() schema.GroupVersionKind {
	switch k {
	case KindSecretBinding:
		return core.GroupVersion.WithKind(string(k))
	case KindSecret:
		return schema.GroupVersionKind{Version: "v1", Kind: string(k)}
	default:
		return security.GroupVersion.WithKind(string(KindCredentialsBinding))
	}
}

func (k Kind) listGVK() schema.GroupVersionKind {
	gvk := k.GroupVersionKind()
	gvk.Kind += "List"
	return gvk
}
