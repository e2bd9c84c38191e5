package storage_test

import "testing"

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
