package devstack

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/lmssim"
)

// startLMS starts the LMS stand-in on a port of its own and points cfg's
// LMS settings at it (a token new on every start); stop shuts it down. Its
// tenants are ready, and its certificates signed, at the first read, so
// that the walkthrough's runtimes wait for nothing.
func startLMS(cfg *config.Config, host string) (stop func(), err error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating the LMS stand-in's token: %w", err)
	}
	l := &cfg.LMS
	l.Token = hex.EncodeToString(raw)
	sim, err := lmssim.New(l.Token)
	if err != nil {
		return nil, err
	}
	sim.ReadyAfter, sim.SignAfter = 1, 1
	base, stop, err := serveStandIn(standInHost(host), sim.Handler())
	if err != nil {
		return nil, fmt.Errorf("LMS stand-in: %w", err)
	}
	l.URL = base
	return stop, nil
}
