package infrasim

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/gardener/security"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/testing/k8stest"
)

// The simulated account cleaner hands back, as upstream's subscription
// cleanup does, a dirty account no Shoot references (dirty and tenant labels
// removed) once its Delay is over, and leaves alone dirty accounts a Shoot
// still references or dirty for less than Delay, and claimed and shared
// ones; on a real apiserver.
func TestAccountCleanerReturnsDirtyAccounts(t *testing.T) {
	t.Parallel()
	c := env.Client(t, k8stest.Scheme(t, core.AddToScheme, security.AddToScheme))
	ns := unique("garden-p")
	createNamespace(t, c, ns)
	ctx := t.Context()
	for name, labels := range map[string]map[string]string{
		"az-old":     {hyperscaler.LabelTenantNameUpstream: "ga-1"},
		"az-used":    {hyperscaler.LabelTenantNameUpstream: "ga-2"},
		"az-fresh":   {hyperscaler.LabelTenantNameUpstream: "ga-3"},
		"az-claimed": {hyperscaler.LabelTenantNameUpstream: "ga-4"},
		"az-shared":  {hyperscaler.LabelShared: "true"},
	} {
		labels[hyperscaler.LabelHyperscalerTypeUpstream] = hyperscaler.TypeAzure
		for _, o := range hyperscaler.AccountObjects(hyperscaler.KindCredentialsBinding, ns, name, "azure", labels, map[string]string{"k": "v"}) {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	pool := hyperscaler.NewAccountPool(c, hyperscaler.KindCredentialsBinding, ns, nil)
	for name, tenant := range map[string]string{"az-old": "ga-1", "az-used": "ga-2"} {
		if err := pool.MarkDirtyByName(ctx, name, tenant); err != nil {
			t.Fatal(err)
		}
	}
	// A Shoot still on az-used (its deletion not finished, say).
	if err := c.Create(ctx, &core.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "c-used", Namespace: ns},
		Spec: core.ShootSpec{CredentialsBindingName: ptr.To("az-used"), Region: "westeurope", Provider: core.ShootProvider{Type: "azure"}}}); err != nil {
		t.Fatal(err)
	}
	cleaner := &AccountCleaner{Pool: pool, Delay: time.Hour, Log: testLog()}
	later := time.Now().Add(2 * time.Hour)
	// az-fresh goes dirty "now": an hour before `later` is over.
	if err := pool.MarkDirtyByName(ctx, "az-fresh", "ga-3"); err != nil {
		t.Fatal(err)
	}
	fresh := time.Now().Add(time.Minute)

	if released, err := cleaner.Pass(ctx, fresh); err != nil || len(released) != 0 {
		t.Fatalf("pass within the delay: released %v, %v; want none", released, err)
	}
	released, err := cleaner.Pass(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(released)
	if want := []string{"az-fresh", "az-old"}; !slices.Equal(released, want) {
		t.Errorf("released %v, want %v", released, want)
	}
	want := map[string]hyperscaler.AccountState{"az-old": hyperscaler.StateFree, "az-fresh": hyperscaler.StateFree,
		"az-used": hyperscaler.StateDirty, "az-claimed": hyperscaler.StateClaimed, "az-shared": hyperscaler.StateShared}
	for name, state := range want {
		a, err := pool.Account(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if a.State != state || (state == hyperscaler.StateFree && (a.Tenant != "" || a.DirtySince != nil)) {
			t.Errorf("%s after the pass: %+v, want %s", name, a, state)
		}
	}
	// The Shoot gone, the next pass hands az-used back too.
	if err := c.Delete(ctx, &core.Shoot{ObjectMeta: metav1.ObjectMeta{Name: "c-used", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if released, err := cleaner.Pass(ctx, later); err != nil || !slices.Equal(released, []string{"az-used"}) {
		t.Errorf("pass after the Shoot went: released %v, %v; want az-used", released, err)
	}
}

// Headroom: with the cleaner, a pool of two accounts serves one global account after another
// without running dry, each claim released (dirty) when its tenant's runtime goes, as keb dev's
// pool does for a README's provisionings and deprovisionings; without it the third claim finds
// none.
func TestAccountCleanerKeepsThePoolFromRunningDry(t *testing.T) {
	t.Parallel()
	c := env.Client(t, k8stest.Scheme(t, core.AddToScheme, security.AddToScheme))
	ctx := t.Context()
	for _, clean := range []bool{true, false} {
		ns := unique("garden-p")
		createNamespace(t, c, ns)
		for _, name := range []string{"az-1", "az-2"} {
			for _, o := range hyperscaler.AccountObjects(hyperscaler.KindCredentialsBinding, ns, name, "azure",
				map[string]string{hyperscaler.LabelHyperscalerTypeUpstream: hyperscaler.TypeAzure}, map[string]string{"k": "v"}) {
				if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
		}
		pool := hyperscaler.NewAccountPool(c, hyperscaler.KindCredentialsBinding, ns, nil)
		cleaner := &AccountCleaner{Pool: pool, Delay: time.Minute, Log: testLog()}
		azure := hyperscaler.Pool{Type: hyperscaler.TypeAzure}
		for i := range 5 {
			tenant := fmt.Sprintf("ga-%d", i)
			acc, err := pool.Claim(ctx, azure, tenant)
			if !clean && i == 2 {
				if !errors.Is(err, hyperscaler.ErrNoAccount) {
					t.Errorf("without the cleaner, claim %d: %v, want ErrNoAccount", i, err)
				}
				break
			}
			if err != nil {
				t.Fatalf("cleaner %v, claim %d of 5 on a pool of 2: %v", clean, i, err)
			}
			if err := pool.MarkDirtyByName(ctx, acc.Name, tenant); err != nil {
				t.Fatal(err)
			}
			if clean {
				if _, err := cleaner.Pass(ctx, time.Now().Add(2*time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
