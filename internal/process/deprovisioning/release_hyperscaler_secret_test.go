package deprovisioning_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kyma-keb/keb/internal/gardener/core"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
)

// poolSecret is an account of the pool; tenant "self" is the tested instance's global account.
type poolSecret struct {
	name, typ, tenant       string
	shared, dirty, internal bool
}

func newPool(t *testing.T, tenant string, secrets ...poolSecret) (*hyperscaler.AccountPool, string) {
	t.Helper()
	c := kcpClient(t)
	ns := newNamespace(t)
	for _, s := range secrets {
		l := map[string]string{hyperscaler.LabelHyperscalerTypeUpstream: s.typ}
		if s.tenant == "self" {
			l[hyperscaler.LabelTenantNameUpstream] = tenant
		} else if s.tenant != "" {
			l[hyperscaler.LabelTenantNameUpstream] = s.tenant
		}
		if s.internal {
			l[hyperscaler.LabelInternal] = "true"
		}
		if s.shared {
			l[hyperscaler.LabelShared] = "true"
		}
		if s.dirty {
			l[hyperscaler.LabelDirty] = "true"
		}
		processtest.PoolAccount(t, c, ns, s.name, l)
	}
	return hyperscaler.NewAccountPool(c, hyperscaler.KindCredentialsBinding, ns, nil), ns
}

// dirtyLabels returns each pool Secret's dirty label.
func dirtyLabels(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, l := range processtest.PoolLabels(t, kcpClient(t), ns) {
		out[name] = l[hyperscaler.LabelDirty]
	}
	return out
}

// shoot is a Shoot of the project referencing a binding; "own" names the tested instance's Shoot.
type shoot struct{ name, binding string }

func TestReleaseHyperscalerSecret(t *testing.T) {
	t.Parallel()
	pool := []poolSecret{
		{name: "az-mine", typ: "azure", tenant: "self"},
		{name: "az-other-tenant", typ: "azure", tenant: "someone-else"},
		{name: "az-free", typ: "azure"},
		{name: "az-shared", typ: "azure", shared: true},
		{name: "gcp-mine", typ: "gcp", tenant: "self"},
		{name: "az-internal", typ: "azure", tenant: "self", internal: true},
	}
	long := 2 * time.Hour
	tests := []struct {
		name   string
		secret string // the recorded account; "" none
		typ    string
		shared bool
		// temporary: the deprovisioning suspends the instance.
		temporary bool
		shoots    []shoot
		// startedAgo: how long ago the step first ran (0: now).
		startedAgo time.Duration
		others     int
		countErr   error
		want       processtest.Outcome
		// wantCounted: what the store was asked ("account" for the binding, "tenant" for the tenant's instances).
		wantCounted string
		wantDirty   []string // pool accounts dirty afterwards
	}{
		{name: "shared account: nothing released", secret: "az-shared", typ: "azure", shared: true, want: processtest.Done},
		{name: "halted provisioning never recorded its claim: the tenant's account is found by label and released",
			want: processtest.Done, wantCounted: "tenant", wantDirty: []string{"az-mine"}},
		{name: "provider without a pool: nothing released", typ: "nowhere", want: processtest.Done},
		{name: "other instances on the account: kept", secret: "az-mine", typ: "azure", others: 1,
			want: processtest.Done, wantCounted: "account"},
		{name: "last instance, no Shoot uses it: marked dirty", secret: "az-mine", typ: "azure",
			want: processtest.Done, wantCounted: "account", wantDirty: []string{"az-mine"}},
		{name: "last gcp instance: only the gcp account marked dirty", secret: "gcp-mine", typ: "gcp",
			want: processtest.Done, wantCounted: "account", wantDirty: []string{"gcp-mine"}},
		{name: "another Shoot still uses the account: kept", secret: "az-mine", typ: "azure",
			shoots: []shoot{{"other-shoot", "az-mine"}, {"unrelated", "az-free"}}, want: processtest.Done, wantCounted: "account"},
		{name: "own Shoot still there: waits, nothing asked", secret: "az-mine", typ: "azure",
			shoots: []shoot{{"own", "az-mine"}}, want: processtest.Retry},
		{name: "own Shoot still there past the bound: kept, never pulled from under it", secret: "az-mine", typ: "azure",
			shoots: []shoot{{"own", "az-mine"}}, startedAgo: long, want: processtest.Done},
		{name: "internal account: never marked", secret: "az-internal", typ: "azure", want: processtest.Done, wantCounted: "account"},
		{name: "store unavailable: temporary error, nothing released", secret: "az-mine", typ: "azure",
			countErr: errors.New("db down"), want: processtest.Temporary, wantCounted: "account"},
		{name: "suspension of the last instance, its Shoot gone: marked dirty as upstream does", secret: "az-mine",
			typ: "azure", temporary: true, want: processtest.Done, wantCounted: "account", wantDirty: []string{"az-mine"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := newOp(t)
			// Initialization fills the provider from the instance.
			op.Record.Provider = op.Instance.Provider
			if tc.typ != "" {
				op.Record.Provider = tc.typ
			}
			op.Record.HyperscalerSecret, op.Record.HyperscalerShared = tc.secret, tc.shared
			if tc.secret != "" {
				op.Record.HyperscalerType = tc.typ
			}
			op.Record.StepStartedAt = map[string]time.Time{"release_hyperscaler_secret": time.Now().Add(-tc.startedAgo)}
			op.Temporary = tc.temporary
			op.Instance.ShootName = "c-" + op.InstanceID[:7]
			p, ns := newPool(t, op.Instance.GlobalAccountID, pool...)
			for _, sh := range tc.shoots {
				name := sh.name
				if name == "own" {
					name = op.Instance.ShootName
				}
				if err := kcpClient(t).Create(t.Context(), &core.Shoot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
					Spec: core.ShootSpec{CredentialsBindingName: ptr.To(sh.binding), Region: "westeurope",
						Provider: core.ShootProvider{Type: "azure"}}}); err != nil {
					t.Fatal(err)
				}
			}
			store := &fakeStore{others: tc.others, countErr: tc.countErr}
			step := &deprovisioning.ReleaseHyperscalerSecret{Store: store, Accounts: p,
				Config: deprovisioning.Config{ShootWait: time.Hour, RemovalPoll: 7 * time.Second}}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "release_hyperscaler_secret", tc.want, res, err)
			if tc.want == processtest.Retry && (res.RetryAfter != step.Config.RemovalPoll || !strings.Contains(op.Description, op.Instance.ShootName)) {
				t.Errorf("waiting %s with %q, want the poll and the Shoot named", res.RetryAfter, op.Description)
			}

			switch tc.wantCounted {
			case "":
				if len(store.countedCalls) > 0 {
					t.Errorf("store asked %v, want no question", store.countedCalls)
				}
			case "tenant":
				want := [3]string{op.Instance.GlobalAccountID, op.Record.Provider, op.InstanceID}
				if len(store.countedCalls) != 1 || store.countedCalls[0] != want {
					t.Errorf("store asked %v, want once %v", store.countedCalls, want)
				}
			case "account":
				want := [3]string{"account", tc.secret, op.InstanceID}
				if len(store.countedCalls) != 1 || store.countedCalls[0] != want {
					t.Errorf("store asked %v, want once %v", store.countedCalls, want)
				}
			}
			dirty := dirtyLabels(t, ns)
			wantDirty := map[string]bool{}
			for _, n := range tc.wantDirty {
				wantDirty[n] = true
			}
			for name, label := range dirty {
				if (label == "true") != wantDirty[name] {
					t.Errorf("pool account %s: dirty=%q, want dirty %v", name, label, wantDirty[name])
				}
			}
			if tc.want != processtest.Done {
				return
			}
			// A re-run after a crash changes nothing more.
			res, err = step.Run(t.Context(), op)
			processtest.MustOutcome(t, "re-run", processtest.Done, res, err)
			if again := dirtyLabels(t, ns); processtest.MustJSON(t, again) != processtest.MustJSON(t, dirty) {
				t.Errorf("re-run changed the pool: %v → %v", dirty, again)
			}
		})
	}
}
