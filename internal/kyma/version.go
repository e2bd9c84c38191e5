package kyma

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/kube"
)

// VersionsConfigMap is the control-plane ConfigMap (in controlplane.Namespace) that pins a Kyma version per
// global account: data key = global account ID, value = Kyma version.
const VersionsConfigMap = "kyma-versions"

// ResolveVersion returns the Kyma version of a new runtime: requested when the on-demand version
// feature is on and the request named one; otherwise the global account's entry in
// kcp-system/kyma-versions; otherwise defaultVersion. A missing ConfigMap or an empty entry means
// "no pin", not an error; any other read error is returned, because guessing the default then
// would silently install the wrong version.
func ResolveVersion(ctx context.Context, r client.Reader, globalAccountID, requested string, onDemand bool, defaultVersion string) (string, error) {
	if onDemand && requested != "" {
		return requested, nil
	}
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: controlplane.Namespace, Name: VersionsConfigMap}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return defaultVersion, nil
	case err != nil:
		return "", fmt.Errorf("reading Kyma version pins %s/%s for global account %s: %w", controlplane.Namespace, VersionsConfigMap, globalAccountID, err)
	}
	if v := cm.Data[globalAccountID]; v != "" && globalAccountID != "" {
		return v, nil
	}
	return defaultVersion, nil
}

// NewVersionPins returns a reader for ResolveVersion that serves the VersionsConfigMap from a
// watch of that one ConfigMap, once it is started and synced, and from direct before: every
// provisioning reads it, and it changes when an operator pins a version. It serves nothing else.
func NewVersionPins(cfg *rest.Config, scheme *k8sruntime.Scheme, direct client.Reader) (*kube.Watched, error) {
	return kube.NewWatched(cfg, cache.Options{
		Scheme:               scheme,
		DefaultNamespaces:    map[string]cache.Config{controlplane.Namespace: {}},
		DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", VersionsConfigMap),
	}, direct, &corev1.ConfigMap{})
}
