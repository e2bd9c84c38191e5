package storage_test

import (
	"maps"
	"testing"
)

func TestAccountUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	// Provisioned on az-1 (resolved parameters), claimed az-1 while
	// provisioning (operation data), suspended on az-2, archived on az-3.
	f.provision("done", "ga-1", "azure", "op-done")
	f.exec(`UPDATE instances SET resolved_parameters = '{"targetSecret":"az-1"}' WHERE instance_id = 'done'`)
	f.provision("claiming", "ga-1", "azure", "op-claiming")
	f.exec(`UPDATE operations SET data = '{"hyperscalerSecret":"az-1"}' WHERE operation_id = 'op-claiming'`)
	f.provision("suspended", "ga-2", "azure", "op-susp")
	f.exec(`UPDATE instances SET state = 'suspended', resolved_parameters = '{"targetSecret":"az-2"}' WHERE instance_id = 'suspended'`)
	f.exec(`UPDATE operations SET data = '{"hyperscalerSecret":"az-2"}' WHERE operation_id = 'op-susp'`)
	f.provision("gone", "ga-3", "azure", "op-gone")
	f.exec(`UPDATE instances SET resolved_parameters = '{"targetSecret":"az-3"}' WHERE instance_id = 'gone'`)
	f.exec(`DELETE FROM instances WHERE instance_id = 'gone'`)

	usage, err := f.store.AccountUsage(f.ctx, []string{"az-1", "az-2", "az-3", "az-4"})
	if err != nil {
		t.Fatal(err)
	}
	if usage["az-1"] != 2 || usage["az-2"] != 1 || usage["az-3"] != 0 || usage["az-4"] != 0 {
		t.Fatalf("usage %v; want az-1: 2, az-2: 1 (each instance once), none for az-3 and az-4", usage)
	}
}

// SharedAccountUsage counts what AccountUsage counts, except instances whose
// provisioning failed after claiming: a balance need not count them, and
// leaving them out keeps the count on indexes.
func TestSharedAccountUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	// Provisioned on sh-1, provisioning on sh-1, suspended on sh-2, failed
	// after claiming sh-2, archived on sh-3.
	f.provision("done", "ga-1", "trial", "op-done")
	f.exec(`UPDATE instances SET resolved_parameters = '{"targetSecret":"sh-1"}' WHERE instance_id = 'done'`)
	f.exec(`UPDATE operations SET state = 'succeeded', data = '{"hyperscalerSecret":"sh-1"}' WHERE operation_id = 'op-done'`)
	f.provision("claiming", "ga-2", "trial", "op-claiming")
	f.exec(`UPDATE operations SET data = '{"hyperscalerSecret":"sh-1"}' WHERE operation_id = 'op-claiming'`)
	f.provision("suspended", "ga-3", "trial", "op-susp")
	f.exec(`UPDATE instances SET state = 'suspended', resolved_parameters = '{"targetSecret":"sh-2"}' WHERE instance_id = 'suspended'`)
	f.provision("failed", "ga-4", "trial", "op-failed")
	f.exec(`UPDATE operations SET state = 'failed', data = '{"hyperscalerSecret":"sh-2"}' WHERE operation_id = 'op-failed'`)
	f.provision("gone", "ga-5", "trial", "op-gone")
	f.exec(`UPDATE instances SET resolved_parameters = '{"targetSecret":"sh-3"}' WHERE instance_id = 'gone'`)
	f.exec(`DELETE FROM instances WHERE instance_id = 'gone'`)

	usage, err := f.store.SharedAccountUsage(f.ctx, []string{"sh-1", "sh-2", "sh-3", "sh-4"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"sh-1": 2, "sh-2": 1}; !maps.Equal(usage, want) {
		t.Fatalf("usage %v; want %v (each instance once; the failed, archived and unused left out)", usage, want)
	}
}
