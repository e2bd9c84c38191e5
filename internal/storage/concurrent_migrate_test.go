package storage_test

import (
	"sync"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
	"github.com/kyma-keb/keb/testing/pgtest"
)

func TestConcurrentMigrateUpAppliesOnce(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	if _, err := storage.MigrateDown(ctx, pool); err != nil {
		t.Fatal(err)
	}
	url := pool.Config().ConnString()
	const replicas = 4
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := storage.Open(ctx, url, 0)
			if err != nil {
				errs[i] = err
				return
			}
			defer p.Close()
			_, errs[i] = storage.MigrateUp(ctx, p)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}
