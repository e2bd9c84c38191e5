package devstack

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/iassim"
)

// devIdentityProvider is the IAS stand-in's corporate identity provider,
// the one keb's service providers default to.
const devIdentityProvider = "keb-dev-corporate-idp"

// startIAS starts the IAS stand-in on a port of its own and points cfg's
// IAS settings at it (an API user whose password is new on every start);
// stop shuts it down.
func startIAS(cfg *config.Config, host string) (stop func(), err error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating the IAS stand-in's password: %w", err)
	}
	i := &cfg.IAS
	i.UserID, i.UserSecret, i.IdentityProvider = "keb-dev-ias", hex.EncodeToString(raw), devIdentityProvider
	base, stop, err := serveStandIn(standInHost(host), iassim.New(i.UserID, i.UserSecret, devIdentityProvider).Handler())
	if err != nil {
		return nil, fmt.Errorf("IAS stand-in: %w", err)
	}
	i.URL, i.Disabled = base, false
	return stop, nil
}
