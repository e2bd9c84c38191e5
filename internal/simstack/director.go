package simstack

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/directorsim"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// startDirector starts the Director stand-in on a port of its own on host
// and returns the settings that reach it (a client secret new on every
// start). The landscape's Provisioner registered each runtime in the
// Director; here the control plane's Runtime CRs are the registry: a
// runtime is known in its global account once its CR exists, READY with its
// console URL (under shootDomain, keb's APP_SHOOT_DOMAIN) once the
// simulated infrastructure manager made it Ready.
func startDirector(host, shootDomain string, kcp client.Reader) (Settings, func(), error) {
	const clientID = "keb-dev-director"
	secret, err := newSecret("Director")
	if err != nil {
		return nil, nil, err
	}
	lookup := func(ctx context.Context, runtimeID string) (directorsim.Runtime, bool) {
		rt := &im.Runtime{}
		if err := kcp.Get(ctx, client.ObjectKey{Namespace: controlplane.Namespace, Name: kyma.Name(runtimeID)}, rt); err != nil {
			return directorsim.Runtime{}, false
		}
		r := directorsim.Runtime{Tenant: rt.Labels[controlplane.LabelGlobalAccountID]}
		switch rt.Status.State {
		case im.StateReady:
			r.Condition, r.ConsoleURL = "READY", "https://console."+kyma.Domain(rt.Spec.Shoot.Name, shootDomain)
		case im.StateFailed:
			r.Condition = "FAILED"
		}
		return r, true
	}
	base, stop, err := serveStandIn(host, directorsim.New(clientID, secret, lookup).Handler())
	if err != nil {
		return nil, nil, fmt.Errorf("Director stand-in: %w", err)
	}
	return Settings{envDirectorURL: base + directorsim.GraphQLPath, "APP_DIRECTOR_OAUTH_TOKEN_URL": base + directorsim.TokenPath,
		"APP_DIRECTOR_OAUTH_CLIENT_ID": clientID, "APP_DIRECTOR_OAUTH_CLIENT_SECRET": secret}, stop, nil
}
