package hyperscaler

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Account states a census counts.
const (
	StatusFree    = "free"
	StatusClaimed = "claimed"
	StatusDirty   = "dirty"
	StatusShared  = "shared"
)

// Census counts the pool's Secrets by hyperscaler type and status (free, claimed, dirty,
// shared). It reads labels only (metadata list): the credentials never leave the API server.
func (p *Pool) Census(ctx context.Context) (map[string]map[string]int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(secretListGVK)
	if err := p.c.List(ctx, list, client.InNamespace(p.namespace)); err != nil {
		return nil, fmt.Errorf("listing secrets in %s: %w", p.namespace, err)
	}
	out := map[string]map[string]int{}
	for _, s := range list.Items {
		l := poolLabels(s.Labels)
		if l.hyperscalerType == "" {
			continue // not a pool Secret
		}
		if out[l.hyperscalerType] == nil {
			out[l.hyperscalerType] = map[string]int{StatusFree: 0, StatusClaimed: 0, StatusDirty: 0, StatusShared: 0}
		}
		out[l.hyperscalerType][l.status()]++
	}
	return out, nil
}
