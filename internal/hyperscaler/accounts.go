package hyperscaler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AnnotationDirtySince records when a Secret was marked dirty (RFC 3339), so
// operators see how long a wipe has been waiting.
const AnnotationDirtySince = "keb.kyma-project.io/dirty-since"

// AccountState is where a pool Secret is in its life.
type AccountState string

// States of a pool Secret.
const (
	// StateFree: unassigned, the next tenant's claim may take it.
	StateFree AccountState = "free"
	// StateClaimed: a tenant's (tenant-name set), in use by its runtimes.
	StateClaimed AccountState = "claimed"
	// StateDirty: released by its tenant, waiting for the hyperscaler-side
	// wipe; never handed out until an operator releases it.
	StateDirty AccountState = "dirty"
	// StateShared: in a shared pool, used by many tenants, never claimed.
	StateShared AccountState = "shared"
)

// AccountInfo is one pool Secret as operators see it.
type AccountInfo struct {
	Name   string
	Type   string
	State  AccountState
	Tenant string
	// DirtySince is when it was marked dirty; nil when not dirty or marked
	// by a keb that did not record it.
	DirtySince *time.Time
}

// ErrNotReleasable means the Secret is not one Release hands back (shared,
// or not in the pool).
var ErrNotReleasable = errors.New("not a releasable pool account")

// Accounts lists every Secret of the pool (those with a hyperscaler-type or
// hyperscalerType label), by type and name.
func (p *AccountPool) Accounts(ctx context.Context) ([]AccountInfo, error) {
	var secrets []corev1.Secret
	seen := map[string]bool{}
	for _, key := range []string{LabelHyperscalerType, LabelHyperscalerTypeUpstream} {
		found, err := p.list(ctx, labelCondition{key: key, op: selection.Exists})
		if err != nil {
			return nil, fmt.Errorf("listing the account pool: %w", err)
		}
		for _, s := range found {
			if !seen[s.Name] {
				seen[s.Name] = true
				secrets = append(secrets, s)
			}
		}
	}
	out := make([]AccountInfo, 0, len(secrets))
	for i := range secrets {
		out = append(out, accountInfo(&secrets[i]))
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

func accountInfo(s *corev1.Secret) AccountInfo { return accountInfoOf(s.Name, s.Labels, s.Annotations) }

// accountInfoOf reads a pool Secret's labels, in either spelling (see poolLabels).
func accountInfoOf(name string, labels, annotations map[string]string) AccountInfo {
	l := poolLabels(labels)
	a := AccountInfo{Name: name, Type: l.hyperscalerType, Tenant: l.tenant}
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

// Account returns one pool Secret.
func (p *AccountPool) Account(ctx context.Context, name string) (AccountInfo, error) {
	s := &corev1.Secret{}
	if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, s); err != nil {
		return AccountInfo{}, fmt.Errorf("reading account %s/%s: %w", p.namespace, name, err)
	}
	if poolLabels(s.Labels).hyperscalerType == "" {
		return AccountInfo{}, fmt.Errorf("secret %s/%s has no %s label: %w", p.namespace, name, LabelHyperscalerType, ErrNotReleasable)
	}
	return accountInfo(s), nil
}

// Release returns a claimed or dirty Secret to the pool once its
// hyperscaler-side wipe is done: the tenant-name and dirty labels and the
// dirty-since annotation go, so the next claim may take it. The caller makes
// sure no live instance uses it. Releasing a free Secret does nothing.
func (p *AccountPool) Release(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &corev1.Secret{}
		if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, s); err != nil {
			return fmt.Errorf("reading account %s/%s: %w", p.namespace, name, err)
		}
		switch accountInfo(s).State {
		case StateFree:
			return nil
		case StateShared:
			return fmt.Errorf("account %s is shared: %w", name, ErrNotReleasable)
		}
		if poolLabels(s.Labels).hyperscalerType == "" {
			return fmt.Errorf("secret %s has no %s label: %w", name, LabelHyperscalerType, ErrNotReleasable)
		}
		delete(s.Labels, LabelTenantName)
		delete(s.Labels, LabelTenantNameUpstream)
		delete(s.Labels, LabelDirty)
		delete(s.Annotations, AnnotationDirtySince)
		if err := p.c.Update(ctx, s); err != nil {
			return fmt.Errorf("releasing account %s/%s: %w", p.namespace, name, err)
		}
		return nil
	})
}
