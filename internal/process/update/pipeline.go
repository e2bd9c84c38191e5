// Package update holds the steps that change a running runtime after a PATCH,
// one file per step. Step names are persisted in operations' checkpoints:
// never rename one.
package update

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/process"
)

// Config holds the settings the update steps read.
type Config struct {
	// BTPManagerTimeout bounds update_btp_manager_credentials: how long it
	// waits for the runtime's kubeconfig or for the runtime to serve the
	// BtpOperator kind. BTPManagerPoll is how often it looks again.
	BTPManagerTimeout time.Duration
	BTPManagerPoll    time.Duration
}

// runtimeClients gives a client for a provisioned runtime; *runtimeclient.Cache
// is one.
type runtimeClients interface {
	Client(ctx context.Context, runtimeID string) (client.Client, error)
}

// Deps are the parts the steps use.
type Deps struct {
	Config   Config
	Runtimes runtimeClients
}

// Pipeline returns the update pipeline.
func Pipeline(d Deps) process.Pipeline {
	return process.Pipeline{
		Steps: []process.Step{
			&UpdateBTPManagerCredentials{Runtimes: d.Runtimes, Config: d.Config},
		},
		Done: "Operation succeeded: the Service Manager credentials are updated in the runtime",
	}
}
