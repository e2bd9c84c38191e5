package simstack

import (
	"fmt"

	"github.com/kyma-keb/keb/internal/edpsim"
)

// startEDP starts the EDP stand-in for keb's EDP namespace on a port of its
// own on host and returns the settings that reach it (a client secret new
// on every start); stop shuts it down.
func startEDP(host, namespace string) (Settings, func(), error) {
	secret, err := newSecret("EDP")
	if err != nil {
		return nil, nil, err
	}
	base, stop, err := serveStandIn(host, edpsim.New(namespace, secret).Handler())
	if err != nil {
		return nil, nil, fmt.Errorf("EDP stand-in: %w", err)
	}
	return Settings{envEDPAdminURL: base, "APP_EDP_AUTH_URL": base, "APP_EDP_SECRET": secret}, stop, nil
}
