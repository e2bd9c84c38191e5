package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kyma-keb/keb/internal/auth"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/devstack"
)

func tokenCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	var dir, scope string
	var ttl time.Duration
	var printSecret bool
	b := config.NewBinder(fs)
	b.String(&dir, "dir", "APP_DEV_DIR", ".keb", "dev state directory of the running keb dev")
	b.String(&scope, "scope", "KEB_TOKEN_SCOPE", "broker:write cld:read", "space-separated scopes of the token")
	b.Duration(&ttl, "ttl", "KEB_TOKEN_TTL", time.Hour, "token lifetime")
	fs.BoolVar(&printSecret, "client-secret", false, "print the dev OAuth2 client's secret instead of a token (for the curl walkthrough)")
	return func(context.Context, []string) error {
		if err := b.Err(); err != nil {
			return err
		}
		// The key is the dev stack's: a token from another key would be
		// refused, so never create one here.
		if _, err := os.Stat(dir + "/dev-signing-key.pem"); err != nil {
			return fmt.Errorf("no dev signing key in %s: start `keb dev` (make run) first", dir)
		}
		if printSecret {
			client, err := auth.LoadOrCreateDevClient(dir)
			if err != nil {
				return err
			}
			fmt.Println(client.Secret)
			return nil
		}
		key, err := auth.LoadOrCreateDevKey(dir)
		if err != nil {
			return err
		}
		tok, err := key.Mint(devstack.Issuer, devstack.Audience, "keb-token-cli", strings.Fields(scope), ttl)
		if err != nil {
			return err
		}
		fmt.Println(tok)
		return nil
	}
}
