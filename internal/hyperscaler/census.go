package hyperscaler

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// Summary is a hyperscaler type's accounts by state, as `keb pool summary`
// and the console's pool page show them. Free is what the next
// provisionings of the type can claim; dirty ones return once cleaned.
type Summary struct {
	HyperscalerType string `json:"hyperscalerType"`
	Free            int    `json:"free"`
	Claimed         int    `json:"claimed"`
	Shared          int    `json:"shared"`
	Dirty           int    `json:"dirty"`
	EUAccessFree    int    `json:"euAccessFree"`
	Total           int    `json:"total"`
}

// Summarise counts accounts per hyperscaler type and state, types sorted.
func Summarise(accounts []AccountInfo) []Summary {
	byType := map[string]*Summary{}
	for _, a := range accounts {
		s := byType[a.Type]
		if s == nil {
			s = &Summary{HyperscalerType: a.Type}
			byType[a.Type] = s
		}
		s.Total++
		switch a.State {
		case StateFree:
			s.Free++
			if a.EUAccess {
				s.EUAccessFree++
			}
		case StateClaimed:
			s.Claimed++
		case StateShared:
			s.Shared++
		case StateDirty:
			s.Dirty++
		}
	}
	rows := make([]Summary, 0, len(byType))
	for _, s := range byType {
		rows = append(rows, *s)
	}
	slices.SortFunc(rows, func(a, b Summary) int { return strings.Compare(a.HyperscalerType, b.HyperscalerType) })
	return rows
}
