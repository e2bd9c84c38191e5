package simstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/kyma-keb/keb/internal/avssim"
)

// IDs the AVS stand-in is configured with: its parent evaluations exist
// from the start.
const (
	avsParentID      = 40
	avsTrialParentID = 41
	avsTesterID      = 40
	avsGroupID       = 40
)

// startAVS starts the AVS stand-in on a port of its own on host and returns
// the settings that reach it; stop shuts it down. Its password is new on
// every start.
func startAVS(host string) (Settings, func(), error) {
	password, err := newSecret("AVS")
	if err != nil {
		return nil, nil, err
	}
	opts := avssim.Options{ClientID: "keb-dev-avs", Username: "keb-dev", Password: password,
		Parents: []int64{avsParentID, avsTrialParentID}}
	base, stop, err := serveStandIn(host, avssim.New(opts).Handler())
	if err != nil {
		return nil, nil, fmt.Errorf("AVS stand-in: %w", err)
	}
	id := func(n int) string { return strconv.Itoa(n) }
	return Settings{
		envAVSAPIEndpoint: base + avssim.APIPath, "APP_AVS_OAUTH_TOKEN_ENDPOINT": base + avssim.TokenPath,
		"APP_AVS_OAUTH_CLIENT_ID": opts.ClientID, "APP_AVS_OAUTH_USERNAME": opts.Username, "APP_AVS_OAUTH_PASSWORD": opts.Password,
		"APP_AVS_INTERNAL_TESTER_ACCESS_ID": id(avsTesterID), "APP_AVS_EXTERNAL_TESTER_ACCESS_ID": id(avsTesterID),
		"APP_AVS_GROUP_ID": id(avsGroupID), "APP_AVS_PARENT_ID": id(avsParentID),
		"APP_AVS_TRIAL_INTERNAL_TESTER_ACCESS_ID": id(avsTesterID), "APP_AVS_TRIAL_GROUP_ID": id(avsGroupID),
		"APP_AVS_TRIAL_PARENT_ID": id(avsTrialParentID),
	}, stop, nil
}

// serveStandIn serves h on a port of its own on host; base is its URL.
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
