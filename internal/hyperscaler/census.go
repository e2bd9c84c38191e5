package hyperscaler

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Census counts the pool's Secrets by hyperscaler type and AccountState. It reads labels only (metadata list): the credentials never leave the API server.
func (p *AccountPool) Census(ctx context.Context) (map[string]map[string]int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(secretListGVK)
	if err := p.c.List(ctx, list, client.InNamespace(p.namespace)); err != nil {
		return nil, fmt.Errorf("listing secrets in %s: %w", p.namespace, err)
	}
	out := map[string]map[string]int{}
	for _, s := range list.Items {
		a := accountInfoOf(s.Name, s.Labels, s.Annotations)
		if a.Type == "" {
			continue // not a pool Secret
		}
		if out[a.Type] == nil {
			out[a.Type] = map[string]int{}
			for _, st := range []AccountState{StateFree, StateClaimed, StateDirty, StateShared} {
				out[a.Type][string(st)] = 0
			}
		}
		out[a.Type][string(a.State)]++
	}
	return out, nil
}
