package main

import (
	"context"
	"flag"
	"fmt"
	"net"

	"github.com/sirupsen/logrus"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/config"
)

func serveCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	var cfg config.Config
	b := config.NewBinder(fs)
	cfg.BindServe(b)
	return func(ctx context.Context, _ []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		log, err := newLogger(cfg.LogFormat, cfg.LogLevel)
		if err != nil {
			return err
		}
		// Said before anything can stop the start.
		logUpstreamSettings(log, b)
		// After the report: what an upstream name supplied counts.
		if err := cfg.CheckServe(); err != nil {
			return err
		}
		if cfg.TrustGateway {
			log.Warn("APP_AUTH_TRUST_GATEWAY is on: token signatures are NOT verified; only run keb behind a gateway that verifies them")
		}
		a, err := app.New(ctx, cfg, log, nil)
		if err != nil {
			return err
		}
		defer a.Close()
		ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
		if err != nil {
			return fmt.Errorf("listening: %w", err)
		}
		log.WithField("address", ln.Addr().String()).WithField("version", version).Info("keb is serving")
		return a.Serve(ctx, ln)
	}
}

// logUpstreamSettings says, once, what keb made of upstream KEB's setting
// names in the environment: which it read as its own, which keb's own names
// overrode, which mean nothing to keb.
func logUpstreamSettings(log logrus.FieldLogger, b *config.Binder) {
	for _, n := range b.UpstreamReport() {
		entry := log.WithField("upstream_setting", n.Upstream).WithField("outcome", string(n.Outcome))
		if n.Keb != "" {
			entry = entry.WithField("keb_setting", n.Keb)
		}
		if n.Outcome == config.UpstreamRead {
			entry.Info(n.Message())
		} else {
			entry.Warn(n.Message())
		}
	}
}
