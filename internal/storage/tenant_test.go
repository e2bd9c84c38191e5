package storage_test

import "testing"

// A tenant's dedicated account is released only when no instance that needs
// it is left: instances on shared-pool plans (trial) never keep it.
func TestOtherInstancesOfTenantIgnoresSharedPlans(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.provision("azure-1", "ga-1", "azure", "op-1")
	f.provision("azure-2", "ga-1", "azure", "op-2")
	f.provision("trial-1", "ga-1", "trial", "op-3")
	f.provision("other-tenant", "ga-2", "azure", "op-4")
	f.provision("azure-3", "ga-3", "azure", "op-5")
	f.provision("trial-3", "ga-3", "trial", "op-6")
	shared := []string{"plan-id-trial"}
	cases := []struct {
		name   string
		tenant string
		except string
		shared []string
		want   int
	}{
		{name: "another dedicated instance keeps the account", tenant: "ga-1", except: "azure-1", shared: shared, want: 1},
		{name: "a trial does not keep it", tenant: "ga-3", except: "azure-3", shared: shared, want: 0},
		{name: "without shared plans the trial counts", tenant: "ga-3", except: "azure-3", shared: nil, want: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := f.store.OtherInstancesOfTenant(f.ctx, tc.tenant, "azure", tc.except, tc.shared)
			if err != nil || n != tc.want {
				t.Fatalf("got %d, %v; want %d", n, err, tc.want)
			}
		})
	}
}
