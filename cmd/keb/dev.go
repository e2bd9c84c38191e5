package main

import (
	"context"
	"flag"
	"os"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack"
)

func devCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	var cfg config.Config
	var dir string
	b := config.NewBinder(fs)
	b.String(&cfg.Host, "host", "APP_HOST", "127.0.0.1", "address to listen on")
	b.Int(&cfg.Port, "port", "APP_PORT", 8080, "HTTP port")
	b.String(&dir, "dir", "APP_DEV_DIR", ".keb", "directory for dev state: PostgreSQL data, signing key, client, secret key")
	cfg.BindDatabase(b)
	b.String(&cfg.DatabaseSecretKey, "database-secret-key", "APP_DATABASE_SECRET_KEY", "",
		"32-byte key sealing secrets at rest (default: generated once into <dir>/secret-key)")
	cfg.BindBroker(b)
	cfg.BindCommon(b)
	return func(ctx context.Context, _ []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		cfg.MigrateOnStart = true
		log, err := newLogger(cfg.LogFormat, cfg.LogLevel)
		if err != nil {
			return err
		}
		return devstack.Run(ctx, devstack.Options{Dir: dir, Config: cfg, Out: os.Stdout}, log)
	}
}
