package hyperscaler

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestClaim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secrets []poolSecret
		typ     string
		tenant  string
		want    string
		wantErr error // matched with errors.Is; nil with wantAnyErr false means success
		// wantAnyErr expects an error that is not ErrNoAccount.
		wantAnyErr bool
		// wantTenants is every secret's tenant-name label afterwards ("" for none).
		wantTenants map[string]string
	}{
		{
			name:        "unassigned claimed and labelled",
			secrets:     []poolSecret{azureSecret("a-2"), azureSecret("a-1")},
			typ:         TypeAzure,
			tenant:      "ga-1",
			want:        "a-1",
			wantTenants: map[string]string{"a-1": "ga-1", "a-2": ""},
		},
		{
			name:        "tenant's own secret returned",
			secrets:     []poolSecret{azureSecret("a-1"), azureSecret("a-2", LabelTenantName, "ga-1")},
			typ:         TypeAzure,
			tenant:      "ga-1",
			want:        "a-2",
			wantTenants: map[string]string{"a-1": "", "a-2": "ga-1"},
		},
		{
			name:        "other tenant's secret left alone",
			secrets:     []poolSecret{azureSecret("a-1", LabelTenantName, "ga-other"), azureSecret("a-2")},
			typ:         TypeAzure,
			tenant:      "ga-1",
			want:        "a-2",
			wantTenants: map[string]string{"a-1": "ga-other", "a-2": "ga-1"},
		},
		{
			name: "dirty and shared never claimed",
			secrets: []poolSecret{
				azureSecret("a-1", LabelDirty, "true"), azureSecret("a-2", LabelShared, "true"), azureSecret("a-3"),
			},
			typ:         TypeAzure,
			tenant:      "ga-1",
			want:        "a-3",
			wantTenants: map[string]string{"a-1": "", "a-2": "", "a-3": "ga-1"},
		},
		{
			name:        "only dirty and shared left: no account",
			secrets:     []poolSecret{azureSecret("a-1", LabelDirty, "true"), azureSecret("a-2", LabelShared, "true")},
			typ:         TypeAzure,
			tenant:      "ga-1",
			wantErr:     ErrNoAccount,
			wantTenants: map[string]string{"a-1": "", "a-2": ""},
		},
		{
			name:        "tenant's dirty secret not handed out again",
			secrets:     []poolSecret{azureSecret("a-1", LabelTenantName, "ga-1", LabelDirty, "true"), azureSecret("a-2")},
			typ:         TypeAzure,
			tenant:      "ga-1",
			want:        "a-2",
			wantTenants: map[string]string{"a-1": "ga-1", "a-2": "ga-1"},
		},
		{
			name:        "dirty other than true counts as clean",
			secrets:     []poolSecret{azureSecret("a-1", LabelDirty, "false")},
			typ:         TypeAzure,
			tenant:      "ga-1",
			want:        "a-1",
			wantTenants: map[string]string{"a-1": "ga-1"},
		},
		{
			name:        "other hyperscaler type ignored",
			secrets:     []poolSecret{secretOf(TypeGCP, "g-1")},
			typ:         TypeAzure,
			tenant:      "ga-1",
			wantErr:     ErrNoAccount,
			wantTenants: map[string]string{"g-1": ""},
		},
		{
			name:        "type selects its pool",
			secrets:     []poolSecret{azureSecret("a-1"), secretOf(TypeGCP, "g-1")},
			typ:         TypeGCP,
			tenant:      "ga-1",
			want:        "g-1",
			wantTenants: map[string]string{"a-1": "", "g-1": "ga-1"},
		},
		{
			name:        "empty pool: no account",
			typ:         TypeAWS,
			tenant:      "ga-1",
			wantErr:     ErrNoAccount,
			wantTenants: map[string]string{},
		},
		{
			name: "duplicates settled on the lowest name",
			secrets: []poolSecret{
				azureSecret("a-1"), azureSecret("a-3", LabelTenantName, "ga-1"), azureSecret("a-2", LabelTenantName, "ga-1"),
			},
			typ:         TypeAzure,
			tenant:      "ga-1",
			want:        "a-2",
			wantTenants: map[string]string{"a-1": "", "a-2": "ga-1", "a-3": ""},
		},
		{
			name:        "tenant that is no label value",
			secrets:     []poolSecret{azureSecret("a-1")},
			typ:         TypeAzure,
			tenant:      "not a label value!",
			wantAnyErr:  true,
			wantTenants: map[string]string{"a-1": ""},
		},
		{
			name:        "empty tenant",
			secrets:     []poolSecret{azureSecret("a-1")},
			typ:         TypeAzure,
			wantAnyErr:  true,
			wantTenants: map[string]string{"a-1": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil, tt.secrets...)
			got, err := b.pool.Claim(t.Context(), Pool{Type: tt.typ}, tt.tenant)
			switch {
			case tt.wantAnyErr:
				if err == nil || errors.Is(err, ErrNoAccount) {
					t.Fatalf("err = %v, want an error other than ErrNoAccount", err)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Claim: %v", err)
			}
			if want := (Account{Name: tt.want}); got != want {
				t.Errorf("Claim = %+v, want %+v", got, want)
			}
			labels := b.labelsOf(t)
			if len(labels) != len(tt.wantTenants) {
				t.Errorf("%d secrets, want %d", len(labels), len(tt.wantTenants))
			}
			for name, want := range tt.wantTenants {
				if got := labels[name][LabelTenantName]; got != want {
					t.Errorf("secret %s: tenant-name = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestClaimTwiceForOneTenantReturnsTheSameSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, azureSecret("a-1"), azureSecret("a-2"))
	ctx := t.Context()
	first, err := b.pool.Claim(ctx, azure, "ga-1")
	if err != nil {
		t.Fatalf("first Claim: %v", err)
	}
	rv := b.object(t, first.Name).ResourceVersion
	second, err := b.pool.Claim(ctx, azure, "ga-1")
	if err != nil {
		t.Fatalf("second Claim: %v", err)
	}
	if second != first {
		t.Errorf("second Claim = %+v, want %+v", second, first)
	}
	if got := b.object(t, first.Name).ResourceVersion; got != rv {
		t.Errorf("second Claim rewrote the secret: resourceVersion %s, was %s", got, rv)
	}
	if got := b.labelsOf(t)["a-2"][LabelTenantName]; got != "" {
		t.Errorf("a-2 tenant-name = %q, want none", got)
	}
}

func TestClaimAfterReleaseTakesAnotherSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, azureSecret("a-1"), azureSecret("a-2"))
	ctx := t.Context()
	first, err := b.pool.Claim(ctx, azure, "ga-1")
	if err != nil || first.Name != "a-1" {
		t.Fatalf("first Claim = %+v, %v; want a-1", first, err)
	}
	// The tenant's last runtime is gone: its account is marked for cleanup, and the pool
	// must not hand it out again although it handed it to this tenant before.
	if err := b.pool.MarkDirty(ctx, azure, "ga-1"); err != nil {
		t.Fatalf("MarkDirty: %v", err)
	}
	second, err := b.pool.Claim(ctx, azure, "ga-1")
	if err != nil || second.Name != "a-2" {
		t.Fatalf("Claim after release = %+v, %v; want a-2", second, err)
	}
	if got := b.labelsOf(t)["a-2"][LabelTenantName]; got != "ga-1" {
		t.Errorf("a-2 tenant-name = %q, want ga-1", got)
	}
}

// claimConcurrently runs Claim for each tenant at once and returns the results in order.
func claimConcurrently(t *testing.T, pool *AccountPool, tenants []string) []Account {
	t.Helper()
	got := make([]Account, len(tenants))
	errs := make([]error, len(tenants))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, tenant := range tenants {
		wg.Go(func() {
			<-start // release all at once to maximise the race
			got[i], errs[i] = pool.Claim(t.Context(), azure, tenant)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Claim for %s: %v", tenants[i], err)
		}
	}
	return got
}

func TestClaimConcurrentTenantsGetDistinctSecrets(t *testing.T) {
	t.Parallel()
	const n = 20
	var secrets []poolSecret
	tenants := make([]string, n)
	for i := range n {
		secrets = append(secrets, azureSecret(fmt.Sprintf("a-%02d", i)))
		tenants[i] = fmt.Sprintf("ga-%02d", i)
	}
	b := setup(t, nil, secrets...)
	got := claimConcurrently(t, b.pool, tenants)

	labels := b.labelsOf(t)
	owner := map[string]string{} // secret -> tenant returned
	for i, acc := range got {
		if prev, ok := owner[acc.Name]; ok {
			t.Errorf("secret %s handed to %s and %s", acc.Name, prev, tenants[i])
		}
		owner[acc.Name] = tenants[i]
		if l := labels[acc.Name][LabelTenantName]; l != tenants[i] {
			t.Errorf("secret %s returned to %s is labelled tenant-name=%q", acc.Name, tenants[i], l)
		}
	}
	perTenant := map[string]int{}
	for _, l := range labels {
		if tn := l[LabelTenantName]; tn != "" {
			perTenant[tn]++
		}
	}
	for _, tenant := range tenants {
		if perTenant[tenant] != 1 {
			t.Errorf("tenant %s labelled on %d secrets, want 1", tenant, perTenant[tenant])
		}
	}
}

func TestClaimConcurrentForOneTenantSettlesOnOneSecret(t *testing.T) {
	t.Parallel()
	// Several rounds, each in its own pool, because one race may happen to serialise.
	for round := range 3 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			t.Parallel()
			var secrets []poolSecret
			for i := range 5 {
				secrets = append(secrets, azureSecret(fmt.Sprintf("a-%d", i)))
			}
			b := setup(t, nil, secrets...)
			tenants := make([]string, 8)
			for i := range tenants {
				tenants[i] = "ga-1"
			}
			got := claimConcurrently(t, b.pool, tenants)

			var labelled []string
			for name, l := range b.labelsOf(t) {
				if l[LabelTenantName] == "ga-1" {
					labelled = append(labelled, name)
				}
			}
			if len(labelled) != 1 {
				t.Fatalf("secrets labelled for ga-1: %v, want exactly one", labelled)
			}
			for i, acc := range got {
				if acc.Name != labelled[0] {
					t.Errorf("call %d got %s, want %s", i, acc.Name, labelled[0])
				}
			}
		})
	}
}
