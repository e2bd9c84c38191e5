// Package update holds the steps that change a running runtime after a PATCH,
// one file per step: new parameters or a new plan (applied to the Runtime and
// Kyma CRs, recorded on the instance only once the infrastructure manager
// applied them) and new Service Manager credentials (pushed into the
// runtime). Step names are persisted in operations' checkpoints: never
// rename one.
package update

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/kyma"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// Config holds the settings the update steps read.
type Config struct {
	// Namespace is the control-plane namespace of Runtime and Kyma CRs (kcp-system).
	Namespace string
	// BTPManagerTimeout bounds update_btp_manager_credentials: how long it
	// waits for the runtime's kubeconfig or for the runtime to serve the
	// BtpOperator kind. BTPManagerPoll is how often it looks again.
	BTPManagerTimeout time.Duration
	BTPManagerPoll    time.Duration
	// RuntimeTimeout bounds check_runtime_update: how long the
	// infrastructure manager may take to apply a change; RuntimePoll is how
	// often it looks (a watch on the Runtime CR usually wakes it sooner).
	RuntimeTimeout time.Duration
	RuntimePoll    time.Duration
	// RuntimeGrace is how long a written change may leave no trace in a
	// Ready Runtime CR before it counts as applied (im.Write.Applied).
	RuntimeGrace time.Duration
	// AccountTimeout bounds update_hyperscaler_account, waiting for a free
	// account of the new plan's pool; AccountPoll is how often it looks.
	AccountTimeout time.Duration
	// HAP chooses the account pool of a runtime changing plan.
	HAP         provisioning.HAP
	AccountPoll time.Duration
	// Kyma are the installation's choices for Kyma CRs: a plan change
	// rewrites the labels they make.
	Kyma kyma.Settings
	// Runtime are the settings the Runtime CR's new worker pools carry.
	Runtime provisioning.RuntimeSettings
}

// runtimeClients gives a client for a provisioned runtime; *runtimeclient.Cache
// is one.
type runtimeClients interface {
	Client(ctx context.Context, runtimeID string) (client.Client, error)
}

// accountPool hands out hyperscaler accounts; *hyperscaler.AccountPool is one.
type accountPool = provisioning.AccountPool

// updatedStore records a successful update; *storage.Store is one.
type updatedStore interface {
	SetUpdated(ctx context.Context, instanceID string, u storage.Updated) error
}

// Deps are the parts the steps use.
type Deps struct {
	Config   Config
	Catalog  *catalog.Catalog
	KCP      client.Client
	Accounts accountPool
	// AccountStore records the instance's new account; nil records nothing.
	AccountStore provisioning.AccountStore
	Store        updatedStore
	Runtimes     runtimeClients
	// Watch is what the control-plane watch has seen of Runtime CRs; nil:
	// everything is read from KCP.
	Watch process.SeenReader
	// EDP tells EDP a plan change; nil: no such step. EDPRequired makes
	// its failure fail the update.
	EDP         edpUpdater
	EDPRequired bool
}

// Pipeline returns the update pipeline. An update that only pushes
// credentials passes the runtime steps without doing anything, and one that
// changes the runtime passes the credentials step unless it brought new
// credentials too.
func Pipeline(d Deps) process.Pipeline {
	steps := []process.Step{
		&Initialization{Catalog: d.Catalog, KCP: d.KCP, Config: d.Config},
		&UpdateHyperscalerAccount{Catalog: d.Catalog, Accounts: d.Accounts, Store: d.AccountStore, Config: d.Config},
		&UpdateRuntime{KCP: d.KCP, Catalog: d.Catalog, Config: d.Config},
		&CheckRuntimeUpdate{KCP: d.KCP, Watch: d.Watch, Config: d.Config},
		&UpdateKyma{KCP: d.KCP, Config: d.Config},
		&RelabelGlobalAccount{KCP: d.KCP, Config: d.Config},
		&UpdateBTPManagerCredentials{Runtimes: d.Runtimes, Config: d.Config},
	}
	if d.EDP != nil {
		// Last, as upstream's stage of its own: the runtime changed first.
		if d.EDPRequired {
			steps = append(steps, &EDPUpdate{EDP: d.EDP})
		} else {
			steps = append(steps, &OptionalEDPUpdate{EDPUpdate{EDP: d.EDP}})
		}
	}
	return process.Pipeline{
		Steps:     steps,
		Succeeded: recordUpdate(d.Store, d.Catalog),
		Done:      "Operation succeeded: the Service Manager credentials are updated in the runtime",
	}
}
