package overrides

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/kube"
)

// NewSources returns a reader for Resolve that serves the override ConfigMaps and Secrets of
// namespace (those labelled provisioning-runtime-override: "true") from a watch of only those,
// once it is started and synced, and from direct before. Every provisioning resolves its
// overrides, and two labelled lists per provisioning cost the API server a scan of every
// ConfigMap and Secret in the namespace (each runtime's kubeconfig and overrides Secret among
// them), growing with the runtimes; the watch sends the few labelled objects, and only when an
// operator changes one. It serves nothing but Resolve's lists.
func NewSources(cfg *rest.Config, scheme *k8sruntime.Scheme, namespace string, direct client.Reader) (*kube.Watched, error) {
	return kube.NewWatched(cfg, cache.Options{
		Scheme:               scheme,
		DefaultNamespaces:    map[string]cache.Config{namespace: {}},
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{LabelOverride: labelTrue}),
	}, direct, &corev1.ConfigMap{}, &corev1.Secret{})
}
