package provisioning_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
	"github.com/kyma-keb/keb/internal/storage"
)

// releaseStack is an account stack with both steps that touch a tenant's account: the
// provisioning's claim and the deprovisioning's release, on one store and one pool, as two
// replicas on one database and control plane would run them.
type releaseStack struct {
	*accountStack
	claim   *provisioning.ResolveHyperscalerSecret
	release *deprovisioning.ReleaseHyperscalerSecret
}

func newReleaseStack(t *testing.T, accounts int) *releaseStack {
	t.Helper()
	pool := map[string]map[string]string{}
	for i := range accounts {
		pool[fmt.Sprintf("az-%02d", i)] = labelMap(hyperscaler.LabelHyperscalerTypeUpstream, "azure")
	}
	s := newAccountStack(t, pool)
	return &releaseStack{
		accountStack: s,
		claim:        &provisioning.ResolveHyperscalerSecret{Catalog: processtest.Catalog(t), Accounts: s.pool, Store: s.store, Config: testConfig(s.ns)},
		release: &deprovisioning.ReleaseHyperscalerSecret{Store: s.store, Accounts: s.pool,
			Config: deprovisioning.Config{Namespace: s.ns, ShootWait: time.Hour, RemovalPoll: time.Second}},
	}
}

// provisioned is a provisioning of tenant that claimed its account.
func (s *releaseStack) provisioned(t *testing.T, tenant string) *process.Operation {
	t.Helper()
	op := s.provisioning(t, catalog.AzurePlanID, tenant, "cf-eu20", "azure", "westeurope")
	mustDone(t, "claim", s.claim, op)
	return op
}

// deprovisioning accepts a deprovisioning of prov's instance (halting the provisioning, as a
// DELETE does) and returns it.
func (s *releaseStack) deprovisioning(t *testing.T, prov *process.Operation) *process.Operation {
	t.Helper()
	op := processtest.Operation(storage.OperationTypeDeprovision, prov.Instance)
	op.Deadline = time.Now().Add(time.Hour)
	if _, _, err := s.store.CreateDeprovisioning(t.Context(), op.Operation); err != nil {
		t.Fatal(err)
	}
	return op
}

func mustDone(t *testing.T, what string, step process.Step, op *process.Operation) {
	t.Helper()
	if err := runOnce(t, step, op); err != nil {
		t.Fatalf("%s of %s: %v", what, op.InstanceID, err)
	}
}

// runOnce runs step once and wants it done.
func runOnce(t *testing.T, step process.Step, op *process.Operation) error {
	res, err := step.Run(t.Context(), op)
	if err == nil && (res.Failure != nil || res.RetryAfter > 0) {
		err = fmt.Errorf("outcome %+v", res)
	}
	return err
}

// runAll runs each step on its operation at once and wants all done.
func runAll(t *testing.T, steps []process.Step, ops []*process.Operation) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(ops))
	for i := range ops {
		wg.Go(func() {
			<-start
			errs[i] = runOnce(t, steps[i], ops[i])
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s of %s: %v", steps[i].Name(), ops[i].InstanceID, err)
		}
	}
}

// A provisioning racing the release of its global account's account (the account's last
// instance deprovisioned, a new instance of the same global account provisioned at once) never
// runs on an account marked dirty: either the release marked it first and the provisioning
// claims a fresh one, or the provisioning recorded it first and the release keeps it (issue 38
// A). Ten global accounts race at once.
func TestClaimRacingReleaseNeverGetsADirtyAccount(t *testing.T) {
	t.Parallel()
	const tenants = 10
	s := newReleaseStack(t, 3*tenants)
	var steps []process.Step
	var ops, news []*process.Operation
	for i := range tenants {
		tenant := fmt.Sprintf("ga-race-%d-%s", i, s.ns)
		old := s.provisioned(t, tenant)
		newOp := s.provisioning(t, catalog.AzurePlanID, tenant, "cf-eu20", "azure", "westeurope")
		steps = append(steps, s.release, s.claim)
		ops = append(ops, s.deprovisioning(t, old), newOp)
		news = append(news, newOp)
	}
	runAll(t, steps, ops)

	labels := processtest.PoolLabels(t, kcpClient(t), s.ns)
	for _, op := range news {
		name, _ := s.accountOf(t, op.InstanceID)
		l := labels[name]
		if name == "" || l[hyperscaler.LabelDirty] == "true" || l[hyperscaler.LabelTenantNameUpstream] != op.Instance.GlobalAccountID {
			t.Errorf("the new instance of %s runs on account %q labelled %v: a live runtime on an account released for cleanup",
				op.Instance.GlobalAccountID, name, l)
		}
	}
}

// A global account's last instances deprovisioned at once release its account: each release
// leaves out the others, which are themselves on their way out, and under the account lock the
// last one out marks it dirty (issue 38 B). An instance that stays keeps it.
func TestLastInstancesDeprovisionedAtOnceReleaseTheAccount(t *testing.T) {
	t.Parallel()
	const tenants, perTenant = 5, 3
	s := newReleaseStack(t, tenants+1)
	var steps []process.Step
	var ops []*process.Operation
	accountOf := map[string]string{}
	for i := range tenants {
		tenant := fmt.Sprintf("ga-last-%d-%s", i, s.ns)
		for range perTenant {
			prov := s.provisioned(t, tenant)
			accountOf[tenant] = prov.Record.HyperscalerSecret
			steps = append(steps, s.release)
			ops = append(ops, s.deprovisioning(t, prov))
		}
	}
	// A global account keeping one instance: its account stays its own.
	keeper := "ga-keeper-" + s.ns
	_ = s.provisioned(t, keeper)
	leaving := s.provisioned(t, keeper)
	accountOf[keeper] = leaving.Record.HyperscalerSecret
	steps = append(steps, s.release)
	ops = append(ops, s.deprovisioning(t, leaving))

	runAll(t, steps, ops)

	labels := processtest.PoolLabels(t, kcpClient(t), s.ns)
	for tenant, name := range accountOf {
		l := labels[name]
		if l[hyperscaler.LabelTenantNameUpstream] != tenant {
			t.Errorf("account %s of %s is labelled %v", name, tenant, l)
		}
		wantDirty := tenant != keeper
		if got := l[hyperscaler.LabelDirty] == "true"; got != wantDirty {
			t.Errorf("account %s of %s: dirty %v, want %v (labels %v)", name, tenant, got, wantDirty, l)
		}
	}
}
