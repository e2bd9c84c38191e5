package deprovisioning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/storage"
)

// LeftoversJob is the periodic job's name: never rename it.
const LeftoversJob = "retry_leftovers"

// leftoverStore reads and rewrites archived instances' leftovers.
type leftoverStore interface {
	ArchivedWithLeftovers(ctx context.Context, limit int) ([]storage.ArchivedInstance, error)
	SetLeftovers(ctx context.Context, instanceID string, leftovers json.RawMessage) error
	tenantCounter
}

// Leftovers retries, for deprovisioned instances, the steps their
// deprovisioning skipped (process.SkippableStep): the leader runs it
// periodically. What is gone by now is crossed off; what stays is kept for
// the next run, and /info/runtimes shows it.
type Leftovers struct {
	Store    leftoverStore
	KCP      client.Client
	Accounts accountMarker
	Config   Config
	// AVS removes evaluations a deprovisioning left; nil: AVS is not
	// configured, and they stay listed.
	AVS avsRemover
	// EDP removes data tenants a deprovisioning left, once no runtime of
	// their subaccount lives (Subaccounts); nil: they stay listed.
	EDP         edpDeregistrar
	Subaccounts subaccountInstances
	// IAS removes service providers a deprovisioning left; nil: they stay
	// listed.
	IAS iasDeregistrar
	// Batch is how many archived instances one run looks at (default 100).
	Batch int
}

// LeftoversResult is what a run did.
type LeftoversResult struct {
	Instances, Resolved, Remaining int
}

// Run retries the leftovers of the longest-archived instances.
func (l *Leftovers) Run(ctx context.Context) (LeftoversResult, error) {
	var res LeftoversResult
	batch := l.Batch
	if batch <= 0 {
		batch = 100
	}
	archived, err := l.Store.ArchivedWithLeftovers(ctx, batch)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, a := range archived {
		var left []process.Leftover
		if err := json.Unmarshal(a.Leftovers, &left); err != nil {
			errs = append(errs, fmt.Errorf("leftovers of instance %s: %w", a.InstanceID, err))
			continue
		}
		res.Instances++
		var remaining []process.Leftover
		for _, lo := range left {
			gone, err := l.retry(ctx, a, lo)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s of instance %s: %w", lo.Step, a.InstanceID, err))
			}
			if gone {
				res.Resolved++
				continue
			}
			remaining = append(remaining, lo)
		}
		res.Remaining += len(remaining)
		if len(remaining) == len(left) {
			continue
		}
		var raw json.RawMessage
		if len(remaining) > 0 {
			if raw, err = json.Marshal(remaining); err != nil {
				return res, err
			}
		}
		if err := l.Store.SetLeftovers(ctx, a.InstanceID, raw); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// retry does again what the skipped step would have done, and reports
// whether nothing is left of it.
func (l *Leftovers) retry(ctx context.Context, a storage.ArchivedInstance, lo process.Leftover) (bool, error) {
	switch lo.Step {
	case "delete_kyma":
		if a.RuntimeID == "" {
			return true, nil
		}
		k := &kyma.Kyma{}
		k.Name, k.Namespace = kyma.Name(a.RuntimeID), l.Config.Namespace
		return deleteAndCheck(ctx, l.KCP, k)
	case "release_hyperscaler_secret":
		if slices.Contains(l.Config.SharedPlanIDs, a.PlanID) || l.Accounts == nil {
			return true, nil
		}
		hsType, err := hyperscaler.HyperscalerType(a.Provider)
		if err != nil {
			return true, nil // no pool serves this provider
		}
		// The archive keeps the global account the instance had last; its
		// tenant is that account unless its subaccount moved.
		// Under the global account's account lock, as the release step: a concurrent
		// provisioning's claim is either recorded before the count or finds the mark.
		err = l.Store.LockAccounts(ctx, a.GlobalAccountID, func(ctx context.Context, tx storage.AccountTx) error {
			others, err := tx.OtherInstancesOfTenant(ctx, a.GlobalAccountID, a.Provider, a.InstanceID, l.Config.SharedPlanIDs)
			if err != nil || others > 0 {
				return err // the tenant's other runtimes still use it
			}
			// The plain pool: the archive does not keep whether the account was an EU-access one.
			return l.Accounts.MarkDirty(ctx, hyperscaler.Pool{Type: hsType}, a.GlobalAccountID)
		})
		return err == nil, err
	case "remove_avs_evaluations":
		return retryAVS(ctx, l.AVS, lo.Refs)
	case "edp_deregistration":
		if l.EDP == nil || l.Subaccounts == nil {
			return false, nil // EDP is no longer configured: it stays listed
		}
		return retryEDP(ctx, l.EDP, l.Subaccounts, a)
	case "ias_deregistration":
		if l.IAS == nil {
			return false, nil // IAS is no longer configured: it stays listed
		}
		return true, removeServiceProvider(ctx, l.IAS, a.InstanceID)
	default:
		// remove_bindings, soft_delete_btp_services: what they left was in
		// the cluster, which the deprovisioning deleted before archiving.
		return true, nil
	}
}

// accountMarker marks a tenant's account of a pool dirty (*hyperscaler.AccountPool is one).
type accountMarker interface {
	MarkDirty(ctx context.Context, pool hyperscaler.Pool, tenant string) error
}
