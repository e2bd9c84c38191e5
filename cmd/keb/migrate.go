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
	var to int
	b.Int(&to, "to", "KEB_MIGRATE_TO", 0, "with up: stop after this migration version (0: apply all); to replay one migration after another")
	return func(ctx context.Context, args []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		// Flags may follow the action too: keb migrate up --to 14.
		if len(args) > 1 {
			if err := fs.Parse(args[1:]); err != nil {
				return err
			}
			args = append(args[:1], fs.Args()...)
		}
		if len(args) != 1 {
			return errors.New("say what to do: keb migrate up|down|status")
		}
		if to != 0 && args[0] != "up" {
			return errors.New("--to goes with up only")
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
			var told bool
			applied, err := storage.MigrateUpWith(ctx, pool, storage.MigrateOptions{To: int64(to),
				OnLockTimeout: func(err error) {
					fmt.Fprintf(os.Stderr, "a migration gave up waiting for a lock (lock_timeout); trying again: %v\n", err)
				},
				OnMigrationLockBusy: func() {
					if !told {
						told = true
						fmt.Fprintln(os.Stderr, "another migrator (a replica's init container) holds keb's migration lock; waiting for it")
					}
				}})
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
