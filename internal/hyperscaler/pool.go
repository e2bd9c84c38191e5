// Package hyperscaler hands out hyperscaler accounts: Gardener CredentialsBindings (or, by
// configuration, SecretBindings, or the labelled Secrets of older keb installs) in the Gardener
// project namespace, pooled by the hyperscalerType label and claimed per tenant (global account)
// with the tenantName label. Which pool a provisioning draws from (type, EU access, shared) is a
// HAP rule's answer (rules.go). keb reads and writes the objects' metadata only: the credentials
// behind a binding never reach keb.
package hyperscaler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Label keys on the pool's objects. They are shared with the people and tools that fill and clean
// the pool: never rename them.
const (
	// LabelHyperscalerType is keb's older spelling of upstream's hyperscalerType: the pool an
	// account belongs to. Read on every kind; written by nobody.
	LabelHyperscalerType = "hyperscaler-type"
	// LabelTenantName is keb's older spelling of upstream's tenantName: the global account that
	// claimed the account.
	LabelTenantName = "tenant-name"
	// LabelShared set to "true" puts the account in a pool used by many tenants: never claimed.
	LabelShared = "shared"
	// LabelDirty set to "true" marks a released account awaiting cleanup: never handed out again.
	LabelDirty = "dirty"
)

// labelTrue is the value that switches LabelShared, LabelDirty, LabelEUAccess and LabelInternal on.
const labelTrue = "true"

// ErrNoAccount means the pool has no account left to hand out for the requested pool (no
// unassigned one for Claim, no shared one for ClaimShared). The caller retries for a while,
// since the pool may be refilled, then fails the operation saying so.
var ErrNoAccount = errors.New("no hyperscaler account available")

// Pool is which accounts a claim draws from: a HAP rule's answer for one provisioning.
type Pool struct {
	// Type is the hyperscalerType label value (aws, gcp_cf-sa30, openstack_eu-de-1, ...).
	Type string
	// EUAccess draws only accounts labelled euAccess=true; without it, only accounts that are not.
	EUAccess bool
}

// String is the pool as upstream's label selector names it.
func (p Pool) String() string {
	s := LabelHyperscalerTypeUpstream + "=" + p.Type
	if p.EUAccess {
		return s + "," + LabelEUAccess + "=true"
	}
	return s + ",!" + LabelEUAccess
}

// Account is the binding a runtime's cluster is created with.
type Account struct {
	// Name is the binding's name in the pool's namespace: what the Runtime CR's
	// spec.shoot.secretBindingName carries.
	Name string
	// Shared is true for an account from a shared pool, used by many tenants.
	Shared bool
}

// UsageCounter tells how many runtimes use each of the accounts named, in one call (a name nobody
// uses may be absent). ClaimShared asks once per claim, for every shared account of the pool, and
// spreads tenants over the shared pool by it.
type UsageCounter func(ctx context.Context, names []string) (map[string]int, error)

// AccountPool hands out the hyperscaler accounts kept in one namespace.
type AccountPool struct {
	c         client.Client
	kind      Kind
	namespace string
	usage     UsageCounter
	// claims remembers each tenant's account found by Claim (claimKey → name); see knownClaim.
	claims sync.Map
}

// NewAccountPool returns the pool of objects of kind in namespace (garden-<project>). c must read
// straight from the API server, not from a cache: a stale read would hand one account to two
// tenants. usage counts the runtimes on a shared account; nil counts zero for all, so ClaimShared
// then picks the lowest name.
func NewAccountPool(c client.Client, kind Kind, namespace string, usage UsageCounter) *AccountPool {
	if usage == nil {
		usage = func(context.Context, []string) (map[string]int, error) { return nil, nil }
	}
	return &AccountPool{c: c, kind: kind, namespace: namespace, usage: usage}
}

// Kind is the kind of object the pool is made of.
func (p *AccountPool) Kind() Kind { return p.kind }

// Namespace is the namespace the pool's objects are in.
func (p *AccountPool) Namespace() string { return p.namespace }

// object is an empty pool object of the pool's kind, to read into.
func (p *AccountPool) object() *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(p.kind.GroupVersionKind())
	return o
}

// get reads one pool object's metadata.
func (p *AccountPool) get(ctx context.Context, name string) (*metav1.PartialObjectMetadata, error) {
	o := p.object()
	if err := p.c.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, o); err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", p.kind, p.namespace, name, err)
	}
	return o, nil
}

// relabel writes change's edit of o's labels and annotations as a merge patch carrying the
// resourceVersion read: the optimistic lock that makes a claim exclusive (a concurrent writer
// makes it fail with 409 Conflict).
func (p *AccountPool) relabel(ctx context.Context, o *metav1.PartialObjectMetadata, change func(labels, annotations map[string]string)) error {
	orig := o.DeepCopy()
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	if o.Annotations == nil {
		o.Annotations = map[string]string{}
	}
	change(o.Labels, o.Annotations)
	return p.c.Patch(ctx, o, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// list returns the pool's objects matching all the given label conditions.
func (p *AccountPool) list(ctx context.Context, conds ...labelCondition) ([]metav1.PartialObjectMetadata, error) {
	sel := labels.NewSelector()
	for _, c := range conds {
		r, err := labels.NewRequirement(c.key, c.op, c.values)
		if err != nil {
			// Only a tenant or type that is not a valid label value gets here.
			return nil, fmt.Errorf("selecting %ss by label %s: %w", p.kind, c.key, err)
		}
		sel = sel.Add(*r)
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(p.kind.listGVK())
	if err := p.c.List(ctx, list, client.InNamespace(p.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing %ss %q in %s: %w", p.kind, sel, p.namespace, err)
	}
	return list.Items, nil
}

// account is a pool object with what its labels say.
type account struct {
	obj    metav1.PartialObjectMetadata
	labels accountLabels
}

// accounts returns the pool's objects of pool.Type labelled in either spelling (hyperscalerType or
// keb's older hyperscaler-type) that keep says to, sorted by name. Only accounts whose euAccess
// label matches pool.EUAccess are returned: an EU-access account is never given to a runtime that
// may not use it, and an EU-access runtime never gets another.
func (p *AccountPool) accounts(ctx context.Context, pool Pool, keep func(accountLabels) bool) ([]account, error) {
	seen := map[string]bool{}
	var out []account
	for _, key := range []string{LabelHyperscalerTypeUpstream, LabelHyperscalerType} {
		objs, err := p.list(ctx, is(key, pool.Type))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			l := poolLabels(o.Labels)
			if seen[o.Name] || l.hyperscalerType != pool.Type || l.euAccess != pool.EUAccess || !keep(l) {
				continue
			}
			seen[o.Name] = true
			out = append(out, account{obj: o, labels: l})
		}
	}
	slices.SortFunc(out, func(a, b account) int { return strings.Compare(a.obj.Name, b.obj.Name) })
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
