// Package seeds reads where Gardener has seeds, per provider: the regions in which a runtime's
// control plane may be colocated with its workers (the colocateControlPlane parameter). Like
// upstream KEB, keb reads them from a ConfigMap on the control plane (gardener-seeds-cache in
// kcp-system), maintained outside the broker, on every provisioning that asks for colocation:
// a landscape's seeds change without a broker restart.
package seeds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// DefaultConfigMap is the ConfigMap's name unless configured otherwise (upstream's chart default).
const DefaultConfigMap = "gardener-seeds-cache"

// defaultKey holds the seed regions of every provider without a key of its own.
const defaultKey = "default"

// ErrUnavailable is wrapped by every error saying the seed regions could not be read: the
// ConfigMap is missing or unreadable, or holds nothing for the provider. It is the operators'
// problem, not the request's.
var ErrUnavailable = errors.New("seed regions unavailable")

// Cache reads the seed regions from the ConfigMap Namespace/Name.
type Cache struct {
	Reader    client.Reader
	Namespace string
	Name      string
}

// entry is one provider's value in the ConfigMap: YAML with a seedRegions list.
type entry struct {
	SeedRegions []string `json:"seedRegions"`
}

// Regions returns the regions with a seed of provider (aws, azure, gcp, openstack, ...): the
// ConfigMap's key of that name, else its "default" key. An error wraps ErrUnavailable and says
// what the operator must fix.
func (c *Cache) Regions(ctx context.Context, provider string) ([]string, error) {
	var cm corev1.ConfigMap
	where := c.Namespace + "/" + c.Name
	if err := c.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: the control plane has no ConfigMap %s", ErrUnavailable, where)
		}
		return nil, fmt.Errorf("%w: reading ConfigMap %s: %w", ErrUnavailable, where, err)
	}
	key := strings.ToLower(provider)
	raw, ok := cm.Data[key]
	if !ok {
		if raw, ok = cm.Data[defaultKey]; !ok {
			return nil, fmt.Errorf("%w: ConfigMap %s has no key %q and no key %q", ErrUnavailable, where, key, defaultKey)
		}
		key = defaultKey
	}
	var e entry
	if err := yaml.UnmarshalStrict([]byte(raw), &e); err != nil {
		return nil, fmt.Errorf("%w: ConfigMap %s, key %q: %w", ErrUnavailable, where, key, err)
	}
	if e.SeedRegions == nil {
		return nil, fmt.Errorf("%w: ConfigMap %s, key %q: no seedRegions list", ErrUnavailable, where, key)
	}
	return e.SeedRegions, nil
}
