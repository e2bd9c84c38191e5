package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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

// poolListing is how `keb pool` and `keb pool rules` print.
type poolListing struct {
	out    io.Writer
	o      listOutput
	now    func() time.Time
	filter poolFilter
	// summary: counts per type and state instead of the accounts.
	summary bool
}

// bindPool registers the flags of `keb pool [release NAME | rules [--plan P --platform-region R --region H]]`.
func bindPool(fs *flag.FlagSet, out io.Writer, now func() time.Time) func(ctx context.Context, args []string) error {
	e := bindOperator(fs)
	var q ruleQuery
	fs.StringVar(&q.plan, "plan", "", "keb pool rules: plan name (azure, aws, trial, ...)")
	fs.StringVar(&q.platformRegion, "platform-region", catalog.DefaultPlatformRegion, "keb pool rules: platform region (cf-eu10, cf-eu11, ...)")
	fs.StringVar(&q.region, "region", "", "keb pool rules: hyperscaler region (eu-central-1, westeurope, ...)")
	fs.StringVar(&q.provider, "provider", "", "keb pool rules: the runtime's provider where the plan leaves it open (trial); default: the plan's")
	p := poolListing{out: out, now: now}
	fs.StringVar(&p.filter.hyperscalerType, "type", "", "keb pool [summary]: only accounts of this hyperscaler type (azure, aws, gcp, ...)")
	fs.StringVar(&p.filter.state, "state", "", "keb pool [summary]: only accounts in this state (free, claimed, shared, dirty)")
	bindListOutput(e.b, fs, &p.o)
	return func(ctx context.Context, args []string) error {
		if err := p.o.check(); err != nil {
			return err
		}
		if len(args) == 1 && args[0] == "rules" {
			if err := e.b.Err(); err != nil {
				return err
			}
			return poolRules(e.cfg, q, p)
		}
		release := len(args) == 2 && args[0] == "release"
		summary := len(args) == 1 && args[0] == "summary"
		if len(args) != 0 && !release && !summary {
			return errors.New("usage: keb pool [summary] [--type T --state S] | keb pool release NAME | keb pool rules [--plan P --platform-region R --region H]")
		}
		if err := p.filter.check(); err != nil {
			return err
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
		p.summary = summary
		return listAccounts(ctx, pool, store, p)
	}
}

// poolFilter is what --type and --state keep of the pool.
type poolFilter struct{ hyperscalerType, state string }

func (f poolFilter) check() error {
	switch hyperscaler.AccountState(f.state) {
	case "", hyperscaler.StateFree, hyperscaler.StateClaimed, hyperscaler.StateShared, hyperscaler.StateDirty:
		return nil
	}
	return fmt.Errorf("--state %q: want free, claimed, shared or dirty", f.state)
}

func (f poolFilter) keeps(a hyperscaler.AccountInfo) bool {
	return (f.hyperscalerType == "" || a.Type == f.hyperscalerType) && (f.state == "" || string(a.State) == f.state)
}

// accountPool is the part of hyperscaler.AccountPool the pool command uses.
type accountPool interface {
	Accounts(ctx context.Context) ([]hyperscaler.AccountInfo, error)
	Account(ctx context.Context, name string) (hyperscaler.AccountInfo, error)
	Release(ctx context.Context, name string) error
	ShootUsage(ctx context.Context) (map[string][]string, error)
}

// poolAccount is one row of `keb pool`: a pool account, the live
// instances holding it (storage.AccountUsage) and the Shoots referencing it.
type poolAccount struct {
	Name            string   `json:"name"`
	HyperscalerType string   `json:"hyperscalerType"`
	State           string   `json:"state"`
	Internal        bool     `json:"internal,omitempty"`
	EUAccess        bool     `json:"euAccess"`
	TenantName      string   `json:"tenantName,omitempty"`
	Instances       int      `json:"instances"`
	Shoots          []string `json:"shoots"`
	// DirtySince is when the account was released (marked dirty); absent
	// when it is not dirty or a keb that did not record it marked it.
	DirtySince *time.Time `json:"dirtySince,omitempty"`
}

func listAccounts(ctx context.Context, pool accountPool, store *storage.Store, p poolListing) error {
	all, err := pool.Accounts(ctx)
	if err != nil {
		return err
	}
	accounts := slices.DeleteFunc(all, func(a hyperscaler.AccountInfo) bool { return !p.filter.keeps(a) })
	if p.summary {
		return printPoolSummary(p, summarise(accounts))
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
	rows := make([]poolAccount, 0, len(accounts))
	for _, a := range accounts {
		rows = append(rows, poolAccount{Name: a.Name, HyperscalerType: a.Type, State: string(a.State), Internal: a.Internal,
			EUAccess: a.EUAccess, TenantName: a.Tenant, Instances: usage[a.Name], Shoots: append([]string{}, shoots[a.Name]...),
			DirtySince: a.DirtySince})
	}
	return printAccounts(p, rows)
}

// printAccounts prints `keb pool`'s rows: the table with how long each
// dirty account has been so (DIRTY, an age), -o wide with the time too.
func printAccounts(p poolListing, rows []poolAccount) error {
	now := p.now()
	type a = poolAccount
	state := func(a a) string {
		if a.Internal {
			return a.State + ",internal"
		}
		return a.State
	}
	eu := func(a a) string {
		if a.EUAccess {
			return "yes"
		}
		return ""
	}
	dirty := func(a a) string {
		switch {
		case a.DirtySince != nil:
			return age(now, *a.DirtySince)
		case a.State == string(hyperscaler.StateDirty):
			return "unknown"
		}
		return ""
	}
	dirtySince := func(a a) string {
		if a.DirtySince == nil {
			return dirty(a)
		}
		return a.DirtySince.UTC().Format(time.RFC3339)
	}
	cols := []col[a]{
		{"TYPE", func(a a) string { return a.HyperscalerType }},
		{"NAME", func(a a) string { return a.Name }},
		{"STATE", state},
		{"EU", eu},
		{"TENANT", func(a a) string { return a.TenantName }},
		{"INSTANCES", func(a a) string { return fmt.Sprint(a.Instances) }},
		{"SHOOTS", func(a a) string { return strings.Join(a.Shoots, ",") }},
		{"DIRTY", dirty},
	}
	wide := append(slices.Clone(cols[:len(cols)-1]), col[a]{"DIRTY_SINCE", dirtySince})
	return printItems(p.out, p.o, pageOf(rows), cols, wide)
}

// poolSummary is one row of `keb pool summary` (the console's pool page
// shows the same).
type poolSummary = hyperscaler.Summary

// summarise counts accounts per hyperscaler type and state.
var summarise = hyperscaler.Summarise

func printPoolSummary(p poolListing, rows []poolSummary) error {
	type s = poolSummary
	n := func(f func(s) int) func(s) string { return func(r s) string { return fmt.Sprint(f(r)) } }
	cols := []col[s]{
		{"TYPE", func(r s) string { return r.HyperscalerType }},
		{"FREE", n(func(r s) int { return r.Free })},
		{"EU_FREE", n(func(r s) int { return r.EUAccessFree })},
		{"CLAIMED", n(func(r s) int { return r.Claimed })},
		{"SHARED", n(func(r s) int { return r.Shared })},
		{"DIRTY", n(func(r s) int { return r.Dirty })},
		{"TOTAL", n(func(r s) int { return r.Total })},
	}
	return printItems(p.out, p.o, pageOf(rows), cols, nil)
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

// hapRule is one row of `keb pool rules`: a rule in force.
type hapRule struct {
	Number int    `json:"number"`
	Rule   string `json:"rule"`
	// Configured is the rule as written, when that differs from Rule.
	Configured string `json:"configured,omitempty"`
}

// ruleMatch is what `keb pool rules --plan P` prints: the rule a
// provisioning matches and the pool it draws from.
type ruleMatch struct {
	Plan           string `json:"plan"`
	PlatformRegion string `json:"platformRegion"`
	Region         string `json:"region,omitempty"`
	Provider       string `json:"provider"`
	RuleNumber     int    `json:"ruleNumber"`
	Rule           string `json:"rule"`
	Selector       string `json:"selector"`
	Shared         bool   `json:"shared"`
	EUAccess       bool   `json:"euAccess"`
}

// poolRules prints the HAP rules in force (configured, else keb's defaults), or, with --plan, the
// rule a provisioning of that plan from --platform-region in --region matches and the label
// selector of the pool it draws from.
func poolRules(cfg config.Config, q ruleQuery, p poolListing) error {
	cat, err := catalog.Load(cfg.PlansFile)
	if err != nil {
		return fmt.Errorf("loading plans: %w", err)
	}
	var names []string
	for _, pl := range cat.Plans() {
		names = append(names, pl.Name)
	}
	rules, err := hyperscaler.LoadRules(cfg.Engine.HAP.Rules, cfg.Engine.HAP.RuleFile, names, cfg.EnabledPlans)
	if err != nil {
		return err
	}
	if q.plan == "" {
		var rows []hapRule
		for _, r := range rules.List() {
			row := hapRule{Number: r.Number, Rule: r.Canonical()}
			if strings.Join(strings.Fields(r.Text), "") != strings.Join(strings.Fields(row.Rule), "") {
				row.Configured = r.Text
			}
			rows = append(rows, row)
		}
		type h = hapRule
		cols := []col[h]{{"NUMBER", func(h h) string { return fmt.Sprint(h.Number) }}, {"RULE", func(h h) string { return h.Rule }}}
		wide := append(slices.Clone(cols), col[h]{"CONFIGURED", func(h h) string { return h.Configured }})
		return printItems(p.out, p.o, pageOf(rows), cols, wide)
	}
	pl, ok := cat.PlanByName(q.plan)
	if !ok {
		return fmt.Errorf("keb pool rules: no plan %q in the catalog", q.plan)
	}
	if q.provider == "" {
		if q.provider, err = cat.ProviderForPlan(pl.ID, q.platformRegion); err != nil {
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
	m := ruleMatch{Plan: q.plan, PlatformRegion: q.platformRegion, Region: q.region, Provider: q.provider, RuleNumber: r.Number,
		Rule: r.Canonical(), Selector: r.Selector(hsType, q.platformRegion, q.region), Shared: r.Shared, EUAccess: r.EUAccess}
	if p.o.structured() {
		return printObject(p.out, p.o.format, m)
	}
	type mm = ruleMatch
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	cols := []col[mm]{
		{"RULE", func(m mm) string { return fmt.Sprintf("%d: %s", m.RuleNumber, m.Rule) }},
		{"SELECTOR", func(m mm) string { return m.Selector }},
		{"SHARED", func(m mm) string { return yesNo(m.Shared) }},
	}
	wide := append([]col[mm]{{"PLAN", func(m mm) string { return m.Plan }},
		{"PLATFORM_REGION", func(m mm) string { return m.PlatformRegion }},
		{"REGION", func(m mm) string { return m.Region }},
		{"PROVIDER", func(m mm) string { return m.Provider }}}, cols...)
	return printItems(p.out, p.o, pageOf([]ruleMatch{m}), cols, wide)
}
