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
}

// Pipeline returns the deprovisioning pipeline.
func Pipeline(d Deps) process.Pipeline {
	return process.Pipeline{
		Steps: []process.Step{
			&Initialization{Store: d.Store},
			&RemoveBindings{Bindings: d.Bindings},
			&DeleteKyma{KCP: d.KCP, Config: d.Config},
			&DeleteRuntime{KCP: d.KCP, Config: d.Config, Runtimes: d.Runtimes},
			&ReleaseHyperscalerSecret{Store: d.Store, Accounts: d.Accounts, SharedPlanIDs: d.Config.SharedPlanIDs,
				ShootWait: d.Config.ShootWait, Poll: d.Config.RemovalPoll},
			&Archive{Store: d.Store},
		},
		Done: "Operation succeeded: the runtime is deprovisioned",
	}
}
