package hyperscaler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/util/retry"
)

// AnnotationDirtySince records when an account was marked dirty (RFC 3339), so
// operators see how long a wipe has been waiting.
const AnnotationDirtySince = "keb.kyma-project.io/dirty-since"

// AccountState is where a pool account is in its life.
type AccountState string

// States of a pool account.
const (
	// StateFree: unassigned, the next tenant's claim may take it.
	StateFree AccountState = "free"
	// StateClaimed: a tenant's (tenantName set), in use by its runtimes.
	StateClaimed AccountState = "claimed"
	// StateDirty: released by its tenant, waiting for the hyperscaler-side
	// wipe; never handed out until an operator releases it.
	StateDirty AccountState = "dirty"
	// StateShared: in a shared pool, used by many tenants, never claimed.
	StateShared AccountState = "shared"
)

// AccountInfo is one pool account as operators see it.
type AccountInfo struct {
	Name   string
	Type   string
	State  AccountState
	Tenant string
	// EUAccess and Internal are the euAccess and internal labels.
	EUAccess, Internal bool
	// DirtySince is when it was marked dirty; nil when not dirty or marked
	// by a keb that did not record it.
	DirtySince *time.Time
}

// ErrNotReleasable means the account is not one Release hands back (shared,
// or not in the pool).
var ErrNotReleasable = errors.New("not a releasable pool account")

// Accounts lists every account of the pool (those with a hyperscalerType or
// hyperscaler-type label), by type and name.
func (p *AccountPool) Accounts(ctx context.Context) ([]AccountInfo, error) {
	var objs []metav1.PartialObjectMetadata
	seen := map[string]bool{}
	for _, key := range []string{LabelHyperscalerTypeUpstream, LabelHyperscalerType} {
		found, err := p.list(ctx, labelCondition{key: key, op: selection.Exists})
		if err != nil {
			return nil, fmt.Errorf("listing the account pool: %w", err)
		}
		for _, o := range found {
			if !seen[o.Name] {
				seen[o.Name] = true
				objs = append(objs, o)
			}
		}
	}
	out := make([]AccountInfo, 0, len(objs))
	for i := range objs {
		out = append(out, accountInfo(&objs[i]))
	}
	slices.SortFunc(out, func(a, b AccountInfo) int {
		if a.Type != b.Type {
			if a.Type < b.Type {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out, nil
}

func accountInfo(o *metav1.PartialObjectMetadata) AccountInfo {
	return accountInfoOf(o.Name, o.Labels, o.Annotations)
}

// accountInfoOf reads a pool account's labels, in either spelling (see poolLabels).
func accountInfoOf(name string, labels, annotations map[string]string) AccountInfo {
	l := poolLabels(labels)
	a := AccountInfo{Name: name, Type: l.hyperscalerType, Tenant: l.tenant, EUAccess: l.euAccess, Internal: l.internal}
	switch {
	case l.shared:
		a.State = StateShared
	case l.dirty:
		a.State = StateDirty
		if t, err := time.Parse(time.RFC3339, annotations[AnnotationDirtySince]); err == nil {
			a.DirtySince = &t
		}
	case a.Tenant != "":
		a.State = StateClaimed
	default:
		a.State = StateFree
	}
	return a
}

// Account returns one pool account.
func (p *AccountPool) Account(ctx context.Context, name string) (AccountInfo, error) {
	o, err := p.get(ctx, name)
	if err != nil {
		return AccountInfo{}, err
	}
	if poolLabels(o.Labels).hyperscalerType == "" {
		return AccountInfo{}, fmt.Errorf("%s %s/%s has no %s label: %w", p.kind, p.namespace, name, LabelHyperscalerTypeUpstream, ErrNotReleasable)
	}
	return accountInfo(o), nil
}

// Release returns a claimed or dirty account to the pool once its
// hyperscaler-side wipe is done: the tenant and dirty labels and the
// dirty-since annotation go, so the next claim may take it. The caller makes
// sure no live instance uses it. Releasing a free account does nothing.
func (p *AccountPool) Release(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		o, err := p.get(ctx, name)
		if err != nil {
			return err
		}
		switch accountInfo(o).State {
		case StateFree:
			return nil
		case StateShared:
			return fmt.Errorf("account %s is shared: %w", name, ErrNotReleasable)
		}
		if poolLabels(o.Labels).hyperscalerType == "" {
			return fmt.Errorf("%s %s has no %s label: %w", p.kind, name, LabelHyperscalerTypeUpstream, ErrNotReleasable)
		}
		err = p.relabel(ctx, o, func(l, a map[string]string) {
			delete(l, LabelTenantName)
			delete(l, LabelTenantNameUpstream)
			delete(l, LabelDirty)
			delete(a, AnnotationDirtySince)
		})
		if err != nil {
			return fmt.Errorf("releasing account %s/%s: %w", p.namespace, name, err)
		}
		return nil
	})
}
