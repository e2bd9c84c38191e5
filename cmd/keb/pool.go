package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/kyma-keb/keb/internal/gardener"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/storage"
)

func poolCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindPool(fs, os.Stdout, time.Now)
}

// bindPool registers the flags of `keb pool [release NAME]`.
func bindPool(fs *flag.FlagSet, out io.Writer, now func() time.Time) func(ctx context.Context, args []string) error {
	e := bindOperator(fs)
	return func(ctx context.Context, args []string) error {
		release := len(args) == 2 && args[0] == "release"
		if len(args) != 0 && !release {
			return errors.New("usage: keb pool | keb pool release NAME")
		}
		_, store, closeStore, err := e.open(ctx)
		if err != nil {
			return err
		}
		defer closeStore()
		kubeconfig := e.cfg.Engine.GardenerKubecfg
		if kubeconfig == "" {
			kubeconfig = e.cfg.Engine.KCPKubeconfig
		}
		c, err := e.controlPlane(kubeconfig)
		if err != nil {
			return err
		}
		kind, err := hyperscaler.ParseKind(e.cfg.Engine.HAP.PoolKind)
		if err != nil {
			return fmt.Errorf("APP_HAP_POOL_KIND: %w", err)
		}
		pool := hyperscaler.NewAccountPool(c, kind, gardener.ProjectNamespace(e.cfg.Engine.GardenerProject), nil)
		if release {
			return releaseAccount(ctx, pool, store, args[1], out)
		}
		return listAccounts(ctx, pool, store, out, now)
	}
}

// accountPool is the part of hyperscaler.AccountPool the pool command uses.
type accountPool interface {
	Accounts(ctx context.Context) ([]hyperscaler.AccountInfo, error)
	Account(ctx context.Context, name string) (hyperscaler.AccountInfo, error)
	Release(ctx context.Context, name string) error
}

func listAccounts(ctx context.Context, pool accountPool, store *storage.Store, out io.Writer, now func() time.Time) error {
	accounts, err := pool.Accounts(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(accounts))
	for _, a := range accounts {
		names = append(names, a.Name)
	}
	usage, err := store.AccountUsage(ctx, names)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tNAME\tSTATE\tTENANT\tINSTANCES\tDIRTY SINCE")
	for _, a := range accounts {
		since := ""
		switch {
		case a.DirtySince != nil:
			since = fmt.Sprintf("%s (%s ago)", a.DirtySince.Format(time.RFC3339), now().Sub(*a.DirtySince).Truncate(time.Second))
		case a.State == hyperscaler.StateDirty:
			since = "unknown"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", a.Type, a.Name, a.State, a.Tenant, usage[a.Name], since)
	}
	return tw.Flush()
}

// releaseAccount hands a claimed or dirty account back to the pool, refusing
// while a live instance uses it.
func releaseAccount(ctx context.Context, pool accountPool, store *storage.Store, name string, out io.Writer) error {
	a, err := pool.Account(ctx, name)
	if err != nil {
		return err
	}
	usage, err := store.AccountUsage(ctx, []string{name})
	if err != nil {
		return err
	}
	if n := usage[name]; n > 0 {
		return fmt.Errorf("account %s is used by %d live instance(s) of tenant %s: deprovision them first", name, n, a.Tenant)
	}
	if a.State == hyperscaler.StateFree {
		fmt.Fprintf(out, "account %s is already free\n", name)
		return nil
	}
	if err := pool.Release(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(out, "account %s (%s, was %s by tenant %s) is free again\n", name, a.Type, a.State, a.Tenant)
	return nil
}

var _ accountPool = (*hyperscaler.AccountPool)(nil)
