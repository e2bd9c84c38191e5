package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/kyma-keb/keb/internal/avssim"
	"github.com/kyma-keb/keb/internal/config"
)

// IDs the AVS stand-in of `keb dev` is configured with: its parent
// evaluations exist from the start.
const (
	devAVSParentID      = 40
	devAVSTrialParentID = 41
	devAVSTesterID      = 40
	devAVSGroupID       = 40
)

// standInHost is where the stand-ins listen: the broker's host, loopback
// when that is every interface.
func standInHost(host string) string {
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return host
}

// startAVS starts the AVS stand-in on a port of its own (a plain HTTP
// server, as a separate process would serve it) and points cfg's AVS
// settings at it; stop shuts it down. Its password is new on every start.
func startAVS(cfg *config.Config, host string) (stop func(), err error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generating the AVS stand-in's password: %w", err)
	}
	opts := avssim.Options{ClientID: "keb-dev-avs", Username: "keb-dev", Password: hex.EncodeToString(raw),
		Parents: []int64{devAVSParentID, devAVSTrialParentID}}
	base, stop, err := serveStandIn(standInHost(host), avssim.New(opts).Handler())
	if err != nil {
		return nil, fmt.Errorf("AVS stand-in: %w", err)
	}
	a := &cfg.AVS
	a.APIEndpoint, a.OAuthTokenEndpoint = base+avssim.APIPath, base+avssim.TokenPath
	a.OAuthClientID, a.OAuthUsername, a.OAuthPassword = opts.ClientID, opts.Username, opts.Password
	a.InternalTesterAccessID, a.ExternalTesterAccessID = devAVSTesterID, devAVSTesterID
	a.GroupID, a.ParentID = devAVSGroupID, devAVSParentID
	a.TrialInternalTesterAccessID, a.TrialGroupID, a.TrialParentID = devAVSTesterID, devAVSGroupID, devAVSTrialParentID
	return stop, nil
}

// serveStandIn serves h on a port of its own on host, as a separate process
// would; base is its URL.
func serveStandIn(host string, h http.Handler) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = ln.Close()
		}
	}()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
