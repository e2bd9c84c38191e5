// Package hyperscaler hands out hyperscaler accounts: Secrets in the Gardener project namespace,
// pooled by the hyperscaler-type label and claimed per tenant (global account) with the tenant-name
// label. Upstream's spellings (hyperscalerType, tenantName) are read too, and Secrets marked
// euAccess: "true" are never handed out.
package hyperscaler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Label keys on the pool's Secrets. They are shared with the people and tools that fill and clean
// the pool: never rename them.
const (
	// LabelHyperscalerType names the pool a Secret belongs to (TypeAzure, TypeAWS, ...).
	LabelHyperscalerType = "hyperscaler-type"
	// LabelTenantName holds the global account ID that claimed the Secret.
	LabelTenantName = "tenant-name"
	// LabelShared set to "true" puts the Secret in a pool used by many tenants: never claimed.
	LabelShared = "shared"
	// LabelDirty set to "true" marks a released Secret awaiting cleanup: never handed out again.
	LabelDirty = "dirty"
)

// labelTrue is the value that switches LabelShared and LabelDirty on.
const labelTrue = "true"

// ErrNoAccount means the pool has no Secret left to hand out for the requested hyperscaler type
// (no unassigned one for Claim, no shared one for ClaimShared). The caller retries for a while,
// since the pool may be refilled, then fails the operation saying so.
var ErrNoAccount = errors.New("no hyperscaler account available")

// Account is the Secret a runtime's cluster is created with.
type Account struct {
	// SecretName is the Secret's name in the pool's namespace (the Gardener secret binding name).
	SecretName string
	// Shared is true for an account from a shared pool, used by many tenants.
	Shared bool
}

// UsageCounter tells how many runtimes use each of the shared Secrets named, in one call (a
// name nobody uses may be absent). ClaimShared asks once per claim, for every shared Secret of
// the type, and spreads tenants over the shared pool by it.
type UsageCounter func(ctx context.Context, secretNames []string) (map[string]int, error)

// AccountPool hands out the hyperscaler accounts kept in one namespace.
type AccountPool struct {
	c         client.Client
	namespace string
	usage     UsageCounter
	// claims remembers each tenant's Secret found by Claim (claimKey → name); see knownClaim.
	claims sync.Map
}

// NewAccountPool returns the pool of Secrets in namespace (garden-<project>). c must read straight from
// the API server, not from a cache: a stale read would hand one account to two tenants. usage
// counts the runtimes on a shared Secret; nil counts zero for all, so ClaimShared then picks the
// lowest name.
func NewAccountPool(c client.Client, namespace string, usage UsageCounter) *AccountPool {
	if usage == nil {
		usage = func(context.Context, []string) (map[string]int, error) { return nil, nil }
	}
	return &AccountPool{c: c, namespace: namespace, usage: usage}
}

// list returns the pool's Secrets matching all the given label conditions.
func (p *AccountPool) list(ctx context.Context, conds ...labelCondition) ([]corev1.Secret, error) {
	sel := labels.NewSelector()
	for _, c := range conds {
		r, err := labels.NewRequirement(c.key, c.op, c.values)
		if err != nil {
			// Only a tenant or type that is not a valid label value gets here.
			return nil, fmt.Errorf("selecting secrets by label %s: %w", c.key, err)
		}
		sel = sel.Add(*r)
	}
	list := &corev1.SecretList{}
	if err := p.c.List(ctx, list, client.InNamespace(p.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing secrets %q in %s: %w", sel, p.namespace, err)
	}
	return list.Items, nil
}

// account is a pool Secret with what its labels say.
type account struct {
	secret corev1.Secret
	labels accountLabels
}

// accounts returns the pool's Secrets of hyperscalerType labelled in either spelling
// (hyperscaler-type or upstream's hyperscalerType) that keep says to, sorted by name. Secrets
// reserved for EU access (euAccess: "true") are left out: keb hands out no EU-access accounts yet,
// so they are never given to a tenant that may not use them.
func (p *AccountPool) accounts(ctx context.Context, hyperscalerType string, keep func(accountLabels) bool) ([]account, error) {
	seen := map[string]bool{}
	var out []account
	for _, key := range []string{LabelHyperscalerType, LabelHyperscalerTypeUpstream} {
		secrets, err := p.list(ctx, is(key, hyperscalerType))
		if err != nil {
			return nil, err
		}
		for _, s := range secrets {
			l := poolLabels(s.Labels)
			if seen[s.Name] || l.hyperscalerType != hyperscalerType || l.euAccess || !keep(l) {
				continue
			}
			seen[s.Name] = true
			out = append(out, account{secret: s, labels: l})
		}
	}
	slices.SortFunc(out, func(a, b account) int { return strings.Compare(a.secret.Name, b.secret.Name) })
	return out, nil
}

// labelCondition is one term of a label selector.
type labelCondition struct {
	key    string
	op     selection.Operator
	values []string
}

func is(key, value string) labelCondition {
	return labelCondition{key: key, op: selection.Equals, values: []string{value}}
}
