package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/config"
	"github.com/kyma-keb/keb/internal/gardener"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/storage"
)

func poolCommand(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
	return bindPool(fs, os.Stdout, time.Now)
}

// bindPool registers the flags of `keb pool [release NAME | rules [--plan P --platform-region R --region H]]`.
func bindPool(fs *flag.FlagSet, out io.Writer, now func() time.Time) func(ctx context.Context, args []string) error {
	e := bindOperator(fs)
	var q ruleQuery
	fs.StringVar(&q.plan, "plan", "", "keb pool rules: plan name (azure, aws, trial, ...)")
	fs.StringVar(&q.platformRegion, "platform-region", catalog.DefaultPlatformRegion, "keb pool rules: platform region (cf-eu10, cf-eu11, ...)")
	fs.StringVar(&q.region, "region", "", "keb pool rules: hyperscaler region (eu-central-1, westeurope, ...)")
	fs.StringVar(&q.provider, "provider", "", "keb pool rules: the runtime's provider where the plan leaves it open (trial); default: the plan's")
	return func(ctx context.Context, args []string) error {
		if len(args) == 1 && args[0] == "rules" {
			if err := e.b.Err(); err != nil {
				return err
			}
			return poolRules(e.cfg, q, out)
		}
		release := len(args) == 2 && args[0] == "release"
		if len(args) != 0 && !release {
			return errors.New("usage: keb pool | keb pool release NAME | keb pool rules [--plan P --platform-region R --region H]")
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
	ShootUsage(ctx context.Context) (map[string][]string, error)
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
	shoots, err := pool.ShootUsage(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tNAME\tSTATE\tEU\tTENANT\tINSTANCES\tSHOOTS\tDIRTY SINCE")
	for _, a := range accounts {
		since := ""
		switch {
		case a.DirtySince != nil:
			since = fmt.Sprintf("%s (%s ago)", a.DirtySince.Format(time.RFC3339), now().Sub(*a.DirtySince).Truncate(time.Second))
		case a.State == hyperscaler.StateDirty:
			since = "unknown"
		}
		state := string(a.State)
		if a.Internal {
			state += " (internal)"
		}
		eu := ""
		if a.EUAccess {
			eu = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", a.Type, a.Name, state, eu, a.Tenant, usage[a.Name],
			strings.Join(shoots[a.Name], ","), since)
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

// ruleQuery is a provisioning `keb pool rules` finds the rule of.
type ruleQuery struct{ plan, platformRegion, region, provider string }

// poolRules prints the HAP rules in force (configured, else keb's defaults), or, with --plan, the
// rule a provisioning of that plan from --platform-region in --region matches and the label
// selector of the pool it draws from.
func poolRules(cfg config.Config, q ruleQuery, out io.Writer) error {
	cat, err := catalog.Load(cfg.PlansFile)
	if err != nil {
		return fmt.Errorf("loading plans: %w", err)
	}
	var names []string
	for _, p := range cat.Plans() {
		names = append(names, p.Name)
	}
	rules, err := hyperscaler.LoadRules(cfg.Engine.HAP.Rules, cfg.Engine.HAP.RuleFile, names, cfg.EnabledPlans)
	if err != nil {
		return err
	}
	if q.plan == "" {
		for _, r := range rules.List() {
			fmt.Fprintf(out, "%3d  %s\n", r.Number, r.Canonical())
		}
		return nil
	}
	p, ok := cat.PlanByName(q.plan)
	if !ok {
		return fmt.Errorf("keb pool rules: no plan %q in the catalog", q.plan)
	}
	if q.provider == "" {
		if q.provider, err = cat.ProviderForPlan(p.ID, q.platformRegion); err != nil {
			return err
		}
	}
	hsType, err := hyperscaler.HyperscalerType(q.provider)
	if err != nil {
		return err
	}
	r, err := rules.Match(q.plan, q.platformRegion, q.region)
	if err != nil {
		return err
	}
	shared := "no (the global account's own account)"
	if r.Shared {
		shared = "yes"
	}
	fmt.Fprintf(out, "rule %d: %s\nselector: %s\nshared: %s\n", r.Number, r.Canonical(), r.Selector(hsType, q.platformRegion, q.region), shared)
	return nil
}
