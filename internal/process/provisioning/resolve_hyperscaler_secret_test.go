package provisioning_test

import (
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/catalog"
	"github.com/kyma-keb/keb/internal/hyperscaler"
	"github.com/kyma-keb/keb/internal/process/processtest"
	"github.com/kyma-keb/keb/internal/process/provisioning"
)

// poolSecret is a Secret of the hyperscaler account pool; tenant "self" stands for the tested
// operation's global account.
type poolSecret struct {
	name, typ, tenant string
	shared, dirty     bool
}

// newPool creates a namespace holding the pool's Secrets and a real pool over it.
func newPool(t *testing.T, tenant string, secrets ...poolSecret) (*hyperscaler.AccountPool, string) {
	t.Helper()
	c := kcpClient(t)
	ns := newNamespace(t)
	for _, s := range secrets {
		l := map[string]string{hyperscaler.LabelHyperscalerTypeUpstream: s.typ}
		switch s.tenant {
		case "":
		case "self":
			l[hyperscaler.LabelTenantNameUpstream] = tenant
		default:
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

// poolTenants returns each pool Secret's tenant-name label.
func poolTenants(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, l := range processtest.PoolLabels(t, kcpClient(t), ns) {
		out[name] = l[hyperscaler.LabelTenantNameUpstream]
	}
	return out
}

func TestResolveHyperscalerSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		planID   string
		provider string
		pool     []poolSecret
		want     processtest.Outcome
		// wantSecret and wantShared are the account recorded when done.
		wantSecret string
		wantShared bool
		wantType   string
		// wantClaimed: the pool Secret now labelled with the tenant ("" none).
		wantClaimed string
		wantDesc    []string
	}{
		{
			name: "dedicated plan claims a free account", planID: catalog.AzurePlanID, provider: "azure",
			pool: []poolSecret{{name: "az-2", typ: "azure"}, {name: "az-1", typ: "azure"}, {name: "gcp-1", typ: "gcp"}},
			want: processtest.Done, wantSecret: "az-1", wantType: "azure", wantClaimed: "az-1",
		},
		{
			name: "dedicated plan reuses the tenant's account", planID: catalog.AWSPlanID, provider: "aws",
			pool: []poolSecret{{name: "aws-1", typ: "aws"}, {name: "aws-2", typ: "aws", tenant: "self"}},
			want: processtest.Done, wantSecret: "aws-2", wantType: "aws", wantClaimed: "aws-2",
		},
		{
			name: "dedicated plan skips other tenants', shared and dirty accounts", planID: catalog.GCPPlanID, provider: "gcp",
			pool: []poolSecret{
				{name: "g-1", typ: "gcp", tenant: "someone-else"}, {name: "g-2", typ: "gcp", shared: true},
				{name: "g-3", typ: "gcp", dirty: true}, {name: "g-4", typ: "gcp"},
			},
			want: processtest.Done, wantSecret: "g-4", wantType: "gcp", wantClaimed: "g-4",
		},
		{
			name: "trial takes a shared account and claims nothing", planID: catalog.TrialPlanID, provider: "azure",
			pool: []poolSecret{{name: "az-1", typ: "azure"}, {name: "az-shared", typ: "azure", shared: true}},
			want: processtest.Done, wantSecret: "az-shared", wantShared: true, wantType: "azure",
		},
		{
			name: "sap-converged-cloud takes a shared openstack account", planID: catalog.SapConvergedCloudPlanID, provider: "openstack",
			pool: []poolSecret{{name: "os-shared", typ: "openstack", shared: true}},
			want: processtest.Done, wantSecret: "os-shared", wantShared: true, wantType: "openstack",
		},
		{
			name: "empty pool: waits, naming the hyperscaler type", planID: catalog.AzurePlanID, provider: "azure",
			want: processtest.Retry, wantDesc: []string{"azure", "account pool"},
		},
		{
			name: "only other types in the pool: waits for gcp", planID: catalog.GCPPlanID, provider: "gcp",
			pool: []poolSecret{{name: "az-1", typ: "azure"}},
			want: processtest.Retry, wantDesc: []string{"gcp"},
		},
		{
			name: "only taken and dirty accounts left: waits", planID: catalog.AzurePlanID, provider: "azure",
			pool: []poolSecret{{name: "az-1", typ: "azure", tenant: "someone-else"}, {name: "az-2", typ: "azure", tenant: "self", dirty: true}},
			want: processtest.Retry, wantDesc: []string{"azure"},
		},
		{
			name: "trial without a shared account: waits, naming azure", planID: catalog.TrialPlanID, provider: "azure",
			pool: []poolSecret{{name: "az-1", typ: "azure"}},
			want: processtest.Retry, wantDesc: []string{"azure"},
		},
		{
			name: "provider without a pool fails for good", planID: catalog.AzurePlanID, provider: "alibaba",
			want: processtest.Failure,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := newOp(t, tc.planID, "")
			op.Record.Provider = tc.provider
			pool, ns := newPool(t, op.Instance.GlobalAccountID, tc.pool...)
			before := poolTenants(t, ns)
			cfg := testConfig(ns)
			step := &provisioning.ResolveHyperscalerSecret{Catalog: processtest.Catalog(t), Accounts: pool, Config: cfg}
			res, err := step.Run(t.Context(), op)
			processtest.MustOutcome(t, step.Name(), tc.want, res, err)
			if tc.want == processtest.Retry && res.RetryAfter != cfg.AccountPoll {
				t.Errorf("retry after %s, want the account poll %s", res.RetryAfter, cfg.AccountPoll)
			}
			if m := processtest.MissingFrom(op.Description, tc.wantDesc...); m != "" {
				t.Errorf("description %q does not mention %q", op.Description, m)
			}
			if tc.want == processtest.Failure && !strings.Contains(res.Failure.Error(), tc.provider) {
				t.Errorf("failure %q does not name the provider %q", res.Failure, tc.provider)
			}
			d := op.Record
			if d.HyperscalerSecret != tc.wantSecret || d.HyperscalerShared != tc.wantShared || d.HyperscalerType != tc.wantType {
				t.Errorf("recorded secret %q shared %v type %q, want %q %v %q",
					d.HyperscalerSecret, d.HyperscalerShared, d.HyperscalerType, tc.wantSecret, tc.wantShared, tc.wantType)
			}
			after := poolTenants(t, ns)
			for name, tenant := range after {
				want := before[name]
				if name == tc.wantClaimed {
					want = op.Instance.GlobalAccountID
				}
				if tenant != want {
					t.Errorf("pool secret %s: tenant %q, want %q", name, tenant, want)
				}
			}
		})
	}
}

func TestResolveHyperscalerSecretRerunKeepsTheAccount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		planID string
		pool   []poolSecret
	}{
		{name: "dedicated", planID: catalog.AzurePlanID,
			pool: []poolSecret{{name: "az-1", typ: "azure"}, {name: "az-2", typ: "azure"}, {name: "az-3", typ: "azure"}}},
		{name: "shared", planID: catalog.TrialPlanID,
			pool: []poolSecret{{name: "sh-1", typ: "azure", shared: true}, {name: "sh-2", typ: "azure", shared: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first := newOp(t, tc.planID, "")
			first.Record.Provider = "azure"
			pool, ns := newPool(t, first.Instance.GlobalAccountID, tc.pool...)
			step := &provisioning.ResolveHyperscalerSecret{Catalog: processtest.Catalog(t), Accounts: pool, Config: testConfig(ns)}
			res, err := step.Run(t.Context(), first)
			processtest.MustOutcome(t, "first run", processtest.Done, res, err)
			again := *first
			again.Record.HyperscalerSecret = ""
			res, err = step.Run(t.Context(), &again)
			processtest.MustOutcome(t, "second run", processtest.Done, res, err)
			if again.Record.HyperscalerSecret != first.Record.HyperscalerSecret {
				t.Errorf("re-run chose %s, first run %s", again.Record.HyperscalerSecret, first.Record.HyperscalerSecret)
			}
			claimed := 0
			for _, tenant := range poolTenants(t, ns) {
				if tenant == first.Instance.GlobalAccountID {
					claimed++
				}
			}
			if want := map[bool]int{true: 0, false: 1}[first.Record.HyperscalerShared]; claimed != want {
				t.Errorf("tenant holds %d accounts after two runs, want %d", claimed, want)
			}
		})
	}
}
