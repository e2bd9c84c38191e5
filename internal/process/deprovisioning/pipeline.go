// Package deprovisioning holds the steps that tear a runtime down and remove
// its instance, one file per step. Step names are persisted in operations'
// checkpoints: never rename one.
package deprovisioning

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process"
)

// Config holds the settings the deprovisioning steps read.
type Config struct {
	Namespace string // control-plane namespace (kcp-system)
	// SharedPlanIDs are the plans on shared hyperscaler accounts.
	SharedPlanIDs []string
	// RemovalTimeout bounds waiting for a CR to be gone; RemovalPoll is how
	// often the wait looks (watches usually wake it sooner).
	RemovalTimeout time.Duration
	RemovalPoll    time.Duration
	// SkipAfter bounds the retries of the steps that remove things inside
	// or around the runtime (bindings, the Kyma CR, the account's claim):
	// after it they are skipped and their remains reported, so that the
	// cluster is deleted all the same (process.SkippableStep). Only the
	// cluster's own deletion (RemovalTimeout) fails a deprovisioning.
	SkipAfter time.Duration
	// FinalizerGrace is how long BTP service objects of a deleted
	// subaccount's runtime may hold their finalizers before they are
	// stripped (SoftDeleteBTPServices).
	FinalizerGrace time.Duration
	// ShootWait bounds how long the account release waits for the instance's Shoot to be gone.
	ShootWait time.Duration
}

// Store is the part of storage.Store the deprovisioning steps use.
type Store interface {
	provisioningReader
	tenantCounter
	archiver
}

// Deps are the parts the steps use.
type Deps struct {
	Config   Config
	Store    Store
	KCP      client.Client
	Accounts *hyperscaler.AccountPool
	// Runtimes is the replica's runtime client cache, which forgets a
	// runtime once it is gone.
	Runtimes clientForgetter
	// Bindings removes the instance's service bindings; nil when keb
	// offers none.
	Bindings bindingRemover
	// RuntimeClients reach the runtime (the same cache as Runtimes); nil
	// skips what needs the runtime.
	RuntimeClients runtimeClients
	// AVS removes the runtimes' AVS evaluations; nil: AVS is not
	// configured and the pipeline has no such step.
	AVS avsRemover
	// EDP removes the subaccounts' EDP data tenants, and Subaccounts finds
	// a subaccount's other instances; EDP nil: no such step.
	EDP         edpDeregistrar
	Subaccounts subaccountInstances
	// IAS removes the runtimes' IAS service providers; nil: no such step.
	IAS iasDeregistrar
}

// Pipeline returns the deprovisioning pipeline.
func Pipeline(d Deps) process.Pipeline {
	steps := []process.Step{
		&Initialization{Store: d.Store},
		&RemoveBindings{Bindings: d.Bindings, Config: d.Config},
		&SoftDeleteBTPServices{Runtimes: d.RuntimeClients, Config: d.Config},
	}
	if d.AVS != nil {
		// Before the runtime goes, as upstream: its monitors must not
		// alert on a cluster being deleted.
		steps = append(steps, &RemoveAVSEvaluations{AVS: d.AVS})
	}
	if d.EDP != nil {
		steps = append(steps, &EDPDeregistration{EDP: d.EDP, Instances: d.Subaccounts})
	}
	if d.IAS != nil {
		// Upstream's first group, with AVS and EDP.
		steps = append(steps, &IASDeregistration{IAS: d.IAS})
	}
	steps = append(steps,
		&DeleteKyma{KCP: d.KCP, Config: d.Config},
		&DeleteRuntime{KCP: d.KCP, Config: d.Config, Runtimes: d.Runtimes},
		&ReleaseHyperscalerSecret{Store: d.Store, Accounts: d.Accounts, SharedPlanIDs: d.Config.SharedPlanIDs, Config: d.Config},
		&Archive{Store: d.Store},
	)
	return process.Pipeline{Steps: steps, Done: Done}
}
