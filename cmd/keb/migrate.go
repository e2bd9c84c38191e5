package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/storage"
)

func migrateCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	var cfg config.Config
	b := config.NewBinder(fs)
	cfg.BindDatabase(b)
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		if len(args) != 1 {
			return errors.New("say what to do: keb migrate up|down|status")
		}
		if cfg.DatabaseURL == "" {
			return errors.New("no database: set APP_DATABASE_URL (or DATABASE_URL) or pass --database-url")
		}
		pool, err := storage.Open(ctx, cfg.DatabaseURL, 0)
		if err != nil {
			return err
		}
		defer pool.Close()
		switch args[0] {
		case "up":
			applied, err := storage.MigrateUp(ctx, pool)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "applied %d migration(s): %v\n", len(applied), applied)
		case "down":
			v, err := storage.MigrateDown(ctx, pool)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "rolled back migration %d\n", v)
		case "status":
			st, err := storage.Migrations(ctx, pool)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "schema version %d, head %d, at head: %v\n", st.Current, st.Head, st.AtHead())
		default:
			return fmt.Errorf("unknown migrate action %q: use up, down or status", args[0])
		}
		return nil
	}
}
