package hyperscaler

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Census counts the pool's accounts by hyperscaler type and AccountState. It reads labels only
// (metadata list).
func (p *AccountPool) Census(ctx context.Context) (map[string]map[string]int, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(p.kind.listGVK())
	if err := p.c.List(ctx, list, client.InNamespace(p.namespace)); err != nil {
		return nil, fmt.Errorf("listing %ss in %s: %w", p.kind, p.namespace, err)
	}
	out := map[string]map[string]int{}
	for _, o := range list.Items {
		a := accountInfoOf(o.Name, o.Labels, o.Annotations)
		if a.Type == "" {
			continue // not a pool account
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
