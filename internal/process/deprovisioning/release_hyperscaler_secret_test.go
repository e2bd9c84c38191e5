package deprovisioning_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process/deprovisioning"
	"github.com/kyma-keb/keb/internal/process/processtest"
)

// poolSecret is an account of the pool; tenant "self" is the tested instance's global account.
type poolSecret struct {
	name, typ, tenant string
	shared, dirty     bool
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

func TestReleaseHyperscalerSecret(t *testing.T) {
	t.Parallel()
	pool := []poolSecret{
		{name: "az-mine", typ: "azure", tenant: "self"},
		{name: "az-other-tenant", typ: "azure", tenant: "someone-else"},
		{name: "az-free", typ: "azure"},
		{name: "az-shared", typ: "azure", shared: true},
		{name: "gcp-mine", typ: "gcp", tenant: "self"},
	}
	tests := []struct {
		name   string
		secret string // the recorded account; "" none
		typ    string
		shared bool
		// temporary: the deprovisioning suspends the instance.
		temporary bool
		others    int
		countErr  error
		want      processtest.Outcome
		// wantCounted: the store was asked for the tenant's other instances.
		wantCounted bool
		wantDirty   []string // pool Secrets dirty afterwards
	}{
		{name: "shared account: nothing released", secret: "az-shared", typ: "azure", shared: true, want: processtest.Done},
		{name: "halted provisioning never recorded its claim: the tenant's account is found by label and released",
			want: processtest.Done, wantCounted: true, wantDirty: []string{"az-mine"}},
		{name: "provider without a pool: nothing released", typ: "nowhere", want: processtest.Done},
		{name: "other instances of the tenant: account kept", secret: "az-mine", typ: "azure", others: 1,
			want: processtest.Done, wantCounted: true},
		{name: "last instance of the tenant: account marked dirty", secret: "az-mine", typ: "azure",
			want: processtest.Done, wantCounted: true, wantDirty: []string{"az-mine"}},
		{name: "last gcp instance: only the gcp account marked dirty", secret: "gcp-mine", typ: "gcp",
			want: processtest.Done, wantCounted: true, wantDirty: []string{"gcp-mine"}},
		{name: "store unavailable: temporary error, nothing released", secret: "az-mine", typ: "azure",
			countErr: errors.New("db down"), want: processtest.Temporary, wantCounted: true},
		{name: "suspension of the tenant's last instance: account kept, store not asked", secret: "az-mine",
			typ: "azure", temporary: true, want: processtest.Done},
		{name: "suspension with a store that would fail: still done, nothing released", secret: "az-mine",
			typ: "azure", temporary: true, countErr: errors.New("db down"), want: processtest.Done},
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
			op.Temporary = tc.temporary
			p, ns := newPool(t, op.Instance.GlobalAccountID, pool...)
			store := &fakeStore{others: tc.others, countErr: tc.countErr}
			step := &deprovisioning.ReleaseHyperscalerSecret{Store: store, Accounts: p}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, "release_hyperscaler_secret", tc.want, res, err)

			switch {
			case !tc.wantCounted && len(store.countedCalls) > 0:
				t.Errorf("store asked %v, want no question", store.countedCalls)
			case tc.wantCounted:
				want := [3]string{op.Instance.GlobalAccountID, op.Record.Provider, op.InstanceID}
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
					t.Errorf("pool secret %s: dirty=%q, want dirty %v", name, label, wantDirty[name])
				}
			}
			if tc.temporary && !strings.Contains(op.Description, "suspended") {
				t.Errorf("description %q does not say the instance is suspended", op.Description)
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
