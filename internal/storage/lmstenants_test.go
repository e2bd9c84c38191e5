package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEnsureLMSTenantOnce: provisionings of one global account at once
// (each on a connection of its own, as replicas are) create its tenant
// once and all get that one; a failed creation records nothing, so the
// next creates it; another region is another tenant.
func TestEnsureLMSTenantOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	var creations atomic.Int32
	create := func(context.Context) (string, error) {
		n := creations.Add(1)
		return fmt.Sprintf("tenant-%d", n), nil
	}
	failing := func(context.Context) (string, error) { return "", errors.New("LMS refused") }
	if _, _, err := f.store.EnsureLMSTenant(f.ctx, "ga1", "eu", failing); err == nil {
		t.Fatal("a failed creation reported no error")
	}
	if n := f.count(`SELECT count(*) FROM lms_tenants`); n != 0 {
		t.Fatalf("%d tenants recorded after a failed creation", n)
	}
	const replicas = 12
	ids := make([]string, replicas)
	created := make([]bool, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { ids[i], created[i], errs[i] = f.store.EnsureLMSTenant(f.ctx, "ga1", "eu", create) })
	}
	wg.Wait()
	creators := 0
	for i := range replicas {
		if errs[i] != nil || ids[i] != "tenant-1" {
			t.Errorf("provisioning %d: %q, %v; want tenant-1", i, ids[i], errs[i])
		}
		if created[i] {
			creators++
		}
	}
	if creations.Load() != 1 || creators != 1 {
		t.Errorf("%d creations, %d reported as creator; want 1", creations.Load(), creators)
	}
	if id, made, err := f.store.EnsureLMSTenant(f.ctx, "ga1", "us", create); err != nil || !made || id != "tenant-2" {
		t.Errorf("another region: %q, %v, %v; want a new tenant-2", id, made, err)
	}
}
