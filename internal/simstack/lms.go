package simstack

import (
	"fmt"

	"github.com/kyma-keb/keb/internal/lmssim"
)

// startLMS starts the LMS stand-in on a port of its own on host and returns
// the settings that reach it (a token new on every start); stop shuts it
// down. Its tenants are ready, and its certificates signed, at the first
// read, so that the walkthrough's runtimes wait for nothing.
func startLMS(host string) (Settings, func(), error) {
	token, err := newSecret("LMS")
	if err != nil {
		return nil, nil, err
	}
	sim, err := lmssim.New(token)
	if err != nil {
		return nil, nil, err
	}
	sim.ReadyAfter, sim.SignAfter = 1, 1
	base, stop, err := serveStandIn(host, sim.Handler())
	if err != nil {
		return nil, nil, fmt.Errorf("LMS stand-in: %w", err)
	}
	return Settings{envLMSURL: base, "APP_LMS_TOKEN": token}, stop, nil
}
