package devstack

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/edpsim"
)

// startEDP starts the EDP stand-in on a port of its own and points cfg's
// EDP settings at it (namespace and environment as configured, a client
// secret new on every start); stop shuts it down.
func startEDP(cfg *config.Config, host string) (stop func(), err error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating the EDP stand-in's secret: %w", err)
	}
	e := &cfg.EDP
	e.Secret = hex.EncodeToString(raw)
	base, stop, err := serveStandIn(standInHost(host), edpsim.New(e.Namespace, e.Secret).Handler())
	if err != nil {
		return nil, fmt.Errorf("EDP stand-in: %w", err)
	}
	e.AdminURL, e.AuthURL, e.Disabled = base, base, false
	return stop, nil
}
