package provisioning_test

import (
	"fmt"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/app"
	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

// accountStack is a real pool (CredentialsBindings on the package's apiserver) and a real store
// (PostgreSQL) for resolve_hyperscaler_secret.
type accountStack struct {
	pool  *hyperscaler.AccountPool
	ns    string
	store *storage.Store
}

func newAccountStack(t *testing.T, accounts map[string]map[string]string) *accountStack {
	t.Helper()
	ns := newNamespace(t)
	for name, labels := range accounts {
		processtest.PoolAccount(t, kcpClient(t), ns, name, labels)
	}
	db := pgtest.NewPool(t)
	// keb's own rate limit (app.newEngine), not client-go's default of 5 requests a second, which
	// would make 50 concurrent claims queue behind the test's client.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	scheme, err := app.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &accountStack{pool: hyperscaler.NewAccountPool(c, hyperscaler.KindCredentialsBinding, ns, nil), ns: ns,
		store: storage.NewStore(db, nil, nil)}
}

// provisioning creates an accepted provisioning of plan for tenant from platformRegion in the
// store and returns its operation, resolved to provider and region.
func (s *accountStack) provisioning(t *testing.T, planID, tenant, platformRegion, provider, region string) *process.Operation {
	t.Helper()
	inst := processtest.Instance(t, planID)
	inst.GlobalAccountID, inst.PlatformRegion, inst.Provider, inst.ProviderRegion = tenant, platformRegion, provider, region
	inst.Parameters, inst.Context = []byte(`{}`), []byte(`{}`)
	op := processtest.Operation(storage.OperationTypeProvision, inst)
	op.Deadline = time.Now().Add(time.Hour)
	if err := s.store.CreateProvisioning(t.Context(), inst, op.Operation); err != nil {
		t.Fatal(err)
	}
	op.Record.Provider, op.Record.ProviderRegion = provider, region
	return op
}

// accountOf is the binding the store records for an instance, and whether it is EU access.
func (s *accountStack) accountOf(t *testing.T, instanceID string) (string, bool) {
	t.Helper()
	var name *string
	var eu bool
	if err := s.store.Pool().QueryRow(t.Context(), `SELECT subscription_secret_name, eu_access FROM instances WHERE instance_id = $1`,
		instanceID).Scan(&name, &eu); err != nil {
		t.Fatal(err)
	}
	if name == nil {
		return "", eu
	}
	return *name, eu
}

func labelMap(kv ...string) map[string]string {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// 50 concurrent provisionings of 10 global accounts claim exactly one account per global account
// and pool, every provisioning of a global account gets its one account, and an allowlisted
// global account gets as many accounts as its instances need at the limit, never more instances
// on one than the limit.
func TestConcurrentProvisioningsClaimOneAccountPerTenant(t *testing.T) {
	t.Parallel()
	accounts := map[string]map[string]string{}
	for i := range 30 {
		accounts[fmt.Sprintf("az-%02d", i)] = labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "azure")
	}
	s := newAccountStack(t, accounts)
	const tenants, perTenant, limit = 10, 5, 2
	multi := "ga-multi-" + s.ns
	cfg := testConfig(s.ns)
	cfg.HAP = provisioning.HAP{MultiAccountGlobalAccounts: []string{multi}, Limit: func(string) int { return limit }}
	step := &provisioning.ResolveHyperscalerSecret{Catalog: processtest.Catalog(t), Accounts: s.pool, Store: s.store, Config: cfg}

	var ops []*process.Operation
	tenantOf := map[string]string{}
	for i := range tenants * perTenant {
		tenant := fmt.Sprintf("ga-%d-%s", i%tenants, s.ns)
		if i%tenants == 0 {
			tenant = multi
		}
		op := s.provisioning(t, catalog.AzurePlanID, tenant, "cf-eu20", "azure", "westeurope")
		ops = append(ops, op)
		tenantOf[op.InstanceID] = tenant
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ops))
	start := time.Now()
	for i, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := step.Run(t.Context(), op)
			if err == nil && (res.Failure != nil || res.RetryAfter > 0) {
				err = fmt.Errorf("outcome %+v", res)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	// For docs/performance.md: the wall time of the 50 claims (logged, never asserted).
	t.Logf("%d concurrent account choices of %d global accounts: %s", len(ops), tenants, time.Since(start).Round(time.Millisecond))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("provisioning %d: %v", i, err)
		}
	}

	// The pool: which tenant holds which accounts.
	held := map[string][]string{}
	for name, l := range processtest.PoolLabels(t, kcpClient(t), s.ns) {
		if tenant := l[hyperscaler.LabelTenantNameUpstream]; tenant != "" {
			held[tenant] = append(held[tenant], name)
		}
	}
	// What each provisioning recorded, in the operation and on the instance.
	perAccount := map[string]int{}
	usedBy := map[string]map[string]bool{}
	for _, op := range ops {
		name, eu := s.accountOf(t, op.InstanceID)
		if name == "" || name != op.Record.HyperscalerSecret || eu {
			t.Fatalf("instance %s recorded account %q (EU %v), the operation %q", op.InstanceID, name, eu, op.Record.HyperscalerSecret)
		}
		perAccount[name]++
		tenant := tenantOf[op.InstanceID]
		if usedBy[tenant] == nil {
			usedBy[tenant] = map[string]bool{}
		}
		usedBy[tenant][name] = true
	}
	for tenant, names := range held {
		want := 1
		if tenant == multi {
			want = (perTenant + limit - 1) / limit
		}
		if len(names) != want || len(usedBy[tenant]) != want {
			t.Errorf("tenant %s holds %v and its provisionings use %v; want %d account(s)", tenant, names, usedBy[tenant], want)
		}
		for _, n := range names {
			if !usedBy[tenant][n] {
				t.Errorf("tenant %s holds %s, which none of its provisionings uses", tenant, n)
			}
			if tenant == multi && perAccount[n] > limit {
				t.Errorf("account %s of the multi-account tenant carries %d instances, limit %d", n, perAccount[n], limit)
			}
		}
	}
	if len(held) != tenants {
		t.Errorf("%d tenants hold accounts, want %d: %v", len(held), tenants, held)
	}
}

// EU-access platform regions draw only EU-access accounts (keb's default rules), the instance
// records it, and a provisioning with no matching rule, or none left in its pool, fails saying
// which.
func TestAccountPoolRulesAndEUAccess(t *testing.T) {
	t.Parallel()
	s := newAccountStack(t, map[string]map[string]string{
		"aws-1":    labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "aws"),
		"aws-eu-1": labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "aws", hyperscaler.LabelEUAccess, "true"),
		"az-1":     labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "azure"),
		"gcp-1":    labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "gcp"),
		"gcp-ksa":  labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "gcp_cf-sa30"),
	})
	cfg := testConfig(s.ns)
	step := &provisioning.ResolveHyperscalerSecret{Catalog: processtest.Catalog(t), Accounts: s.pool, Store: s.store, Config: cfg}
	for _, tc := range []struct {
		planID, pr, provider, region string
		want                         string
		wantEU                       bool
	}{
		{catalog.AWSPlanID, "cf-eu11", "aws", "eu-central-1", "aws-eu-1", true},
		{catalog.AWSPlanID, "cf-eu10", "aws", "eu-central-1", "aws-1", false},
		{catalog.GCPPlanID, "cf-sa30", "gcp", "me-central2", "gcp-ksa", false},
		{catalog.GCPPlanID, "cf-us30", "gcp", "us-central1", "gcp-1", false},
	} {
		op := s.provisioning(t, tc.planID, "ga-"+tc.pr+"-"+s.ns, tc.pr, tc.provider, tc.region)
		res, err := step.Run(t.Context(), op)
		processtest.MustOutcome(t, "resolve "+tc.pr, processtest.Done, res, err)
		if name, eu := s.accountOf(t, op.InstanceID); name != tc.want || eu != tc.wantEU || op.Record.HyperscalerEUAccess != tc.wantEU {
			t.Errorf("%s on %s: account %s EU %v (record %v), want %s EU %v", tc.provider, tc.pr, name, eu, op.Record.HyperscalerEUAccess, tc.want, tc.wantEU)
		}
	}

	// The EU pool is empty now: an EU provisioning waits, never takes the plain account left.
	op := s.provisioning(t, catalog.AWSPlanID, "ga-eu-2-"+s.ns, "cf-eu11", "aws", "eu-central-1")
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "empty EU pool", processtest.Retry, res, err)
	if !strings.Contains(op.Description, "euAccess=true") {
		t.Errorf("waiting with %q, want the EU pool named", op.Description)
	}
	// Once its wait is over, it fails with upstream's message.
	op.Record.StepStartedAt = map[string]time.Time{step.Name(): time.Now().Add(-cfg.AccountTimeout)}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "empty EU pool past the timeout", processtest.Failure, res, err)
	if msg := res.Failure.Error(); !strings.HasPrefix(msg, provisioning.NoAccountMessage) || !strings.Contains(msg, "hyperscalerType=aws,euAccess=true") {
		t.Errorf("failure %q", msg)
	}

	// A rule set without a rule for gcp: the provisioning fails, naming its attributes.
	rules, err := hyperscaler.ParseRules([]string{"aws", "azure"}, []string{"aws", "azure", "gcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HAP.Rules = rules
	strict := &provisioning.ResolveHyperscalerSecret{Catalog: processtest.Catalog(t), Accounts: s.pool, Store: s.store, Config: cfg}
	op = s.provisioning(t, catalog.GCPPlanID, "ga-norule-"+s.ns, "cf-us30", "gcp", "us-central1")
	res, err = strict.Run(t.Context(), op)
	processtest.MustOutcome(t, "no rule", processtest.Failure, res, err)
	if msg := res.Failure.Error(); !strings.Contains(msg, "no matching rule for provisioning attributes: plan gcp, platform region cf-us30, hyperscaler region us-central1") {
		t.Errorf("failure %q", msg)
	}
}

// A dedicated pool whose one account another tenant released (dirty): the provisioning waits,
// and its last_operation description, as stored, says why and what the operator does about it
// (`keb pool release`); once the account is released it takes it.
func TestEmptyPoolWaitNamesPoolRelease(t *testing.T) {
	t.Parallel()
	s := newAccountStack(t, map[string]map[string]string{
		"az-1": labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "azure", hyperscaler.LabelTenantNameUpstream, "ga-gone"),
	})
	if err := s.pool.MarkDirtyByName(t.Context(), "az-1", "ga-gone"); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(s.ns)
	step := &provisioning.ResolveHyperscalerSecret{Catalog: processtest.Catalog(t), Accounts: s.pool, Store: s.store, Config: cfg}
	op := s.provisioning(t, catalog.AzurePlanID, "ga-new-"+s.ns, "cf-eu10", "azure", "westeurope")
	op.Record.StepStartedAt = map[string]time.Time{step.Name(): time.Now()}
	res, err := step.Run(t.Context(), op)
	processtest.MustOutcome(t, "empty pool", processtest.Retry, res, err)
	if op.FinishedStages == nil {
		op.FinishedStages = []string{} // as the engine's operations carry them
	}
	if _, ok, err := s.store.SaveProgress(t.Context(), op.Operation); err != nil || !ok {
		t.Fatalf("SaveProgress: %v %v", ok, err)
	}
	last, err := s.store.LastOperation(t.Context(), op.InstanceID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Waiting for a free hyperscaler account (hyperscalerType=azure,!euAccess)", "dirty",
		"`keb pool release NAME` returns an emptied account", "30m0s"} {
		if !strings.Contains(last.Description, want) {
			t.Errorf("last_operation description %q lacks %q", last.Description, want)
		}
	}

	if err := s.pool.Release(t.Context(), "az-1"); err != nil {
		t.Fatal(err)
	}
	res, err = step.Run(t.Context(), op)
	processtest.MustOutcome(t, "after keb pool release", processtest.Done, res, err)
	if name, _ := s.accountOf(t, op.InstanceID); name != "az-1" {
		t.Errorf("after the release the provisioning took %q, want az-1", name)
	}
}
