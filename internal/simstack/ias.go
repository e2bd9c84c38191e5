package simstack

import (
	"fmt"

	"github.com/kyma-keb/keb/internal/iassim"
)

// identityProvider is the IAS stand-in's corporate identity provider, the
// one keb's service providers default to.
const identityProvider = "keb-dev-corporate-idp"

// startIAS starts the IAS stand-in on a port of its own on host and returns
// the settings that reach it (an API user whose password is new on every
// start); stop shuts it down.
func startIAS(host string) (Settings, func(), error) {
	const user = "keb-dev-ias"
	password, err := newSecret("IAS")
	if err != nil {
		return nil, nil, err
	}
	base, stop, err := serveStandIn(host, iassim.New(user, password, identityProvider).Handler())
	if err != nil {
		return nil, nil, fmt.Errorf("IAS stand-in: %w", err)
	}
	return Settings{envIASURL: base, "APP_IAS_USER_ID": user, "APP_IAS_USER_SECRET": password,
		"APP_IAS_IDENTITY_PROVIDER": identityProvider}, stop, nil
}
