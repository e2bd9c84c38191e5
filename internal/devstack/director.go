package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/controlplane"
	"github.com/kyma-keb/keb/internal/directorsim"
	im "github.com/kyma-keb/keb/internal/infrastructuremanager"
	"github.com/kyma-keb/keb/internal/kyma"
)

// startDirector starts the Director stand-in on a port of its own and
// points cfg's Director settings at it (a client secret new on every
// start). The landscape's Provisioner registered each runtime in the
// Director; here the control plane's Runtime CRs are the registry: a
// runtime is known in its global account once its CR exists, READY with
// its console URL once the simulated infrastructure manager made it Ready.
func startDirector(cfg *config.Config, host string, kcp client.Reader) (stop func(), err error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating the Director stand-in's secret: %w", err)
	}
	d := &cfg.Director
	d.OAuthClientID, d.OAuthClientSecret = "keb-dev-director", hex.EncodeToString(raw)
	shootDomain := cfg.Engine.ShootDomain
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
	base, stop, err := serveStandIn(standInHost(host), directorsim.New(d.OAuthClientID, d.OAuthClientSecret, lookup).Handler())
	if err != nil {
		return nil, fmt.Errorf("Director stand-in: %w", err)
	}
	d.URL, d.OAuthTokenURL = base+directorsim.GraphQLPath, base+directorsim.TokenPath
	return stop, nil
}
