package storage_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kyma-keb/keb/internal/storage"
)

// A job the queue shows running while nobody holds its instance's lock (its
// worker died, or its completion was lost in a database outage) is made
// available again once it is older than the takeover window; one whose
// worker holds the lock, a young one, and a waiting one are left alone.
func TestTakeOverOrphans(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	job := func(instanceID, opID, state string, age time.Duration) int64 {
		f.provision(instanceID, "ga-"+instanceID, "azure", opID)
		var id int64
		if err := f.pool.QueryRow(f.ctx, `INSERT INTO river_job (args, kind, max_attempts, state, attempt, attempted_at, queue, priority, scheduled_at)
			VALUES ('{}', 'keb_operation', 10, $1, 1, now() - make_interval(secs => $2), 'default', 1, now()) RETURNING id`,
			state, age.Seconds()).Scan(&id); err != nil {
			t.Fatal(err)
		}
		f.exec(`UPDATE operations SET job_id = $2 WHERE operation_id = $1`, opID, id)
		return id
	}
	orphan := job("orphan", "op-orphan", "running", time.Minute)
	locked := job("locked", "op-locked", "running", time.Minute)
	young := job("young", "op-young", "running", time.Second)
	waiting := job("waiting", "op-waiting", "scheduled", time.Minute)

	unlock, ok, err := f.store.LockInstance(f.ctx, "locked")
	if err != nil || !ok {
		t.Fatalf("locking: %v %v", ok, err)
	}

	ids, err := f.store.TakeOverOrphans(f.ctx, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"op-orphan"}) {
		t.Fatalf("taken over %v, want only op-orphan", ids)
	}
	for id, want := range map[int64]string{orphan: "available", locked: "running", young: "running", waiting: "scheduled"} {
		var state string
		if err := f.pool.QueryRow(f.ctx, `SELECT state FROM river_job WHERE id = $1`, id).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state != want {
			t.Errorf("job %d: %s, want %s", id, state, want)
		}
	}

	// Once the lock's holder is gone, its job is an orphan too.
	unlock()
	ids, err = f.store.TakeOverOrphans(f.ctx, 10*time.Second)
	if err != nil || !slices.Equal(ids, []string{"op-locked"}) {
		t.Fatalf("after unlocking: taken over %v, %v; want op-locked", ids, err)
	}
}

// LockOperation locks the instance of an operation in progress, in one
// statement, and is the same lock LockInstance takes.
func TestLockOperation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.provision("inst-1", "ga-1", "azure", "op-1")
	f.provision("inst-2", "ga-2", "azure", "op-done")
	f.exec(`UPDATE operations SET state = 'succeeded' WHERE operation_id = 'op-done'`)

	unlock, ok, err := f.store.LockOperation(f.ctx, "op-1")
	if err != nil || !ok {
		t.Fatalf("LockOperation: %v, %v; want the lock", ok, err)
	}
	if _, ok, err := f.store.LockInstance(f.ctx, "inst-1"); err != nil || ok {
		t.Errorf("LockInstance while the operation's lock is held: %v, %v; want not ok", ok, err)
	}
	if _, ok, err := f.store.LockOperation(f.ctx, "op-1"); err != nil || ok {
		t.Errorf("second LockOperation: %v, %v; want not ok", ok, err)
	}
	unlock()
	relock, ok, err := f.store.LockInstance(f.ctx, "inst-1")
	if err != nil || !ok {
		t.Fatalf("LockInstance after unlock: %v, %v; want the lock", ok, err)
	}
	relock()

	for _, id := range []string{"op-done", "op-unknown"} {
		if _, _, err := f.store.LockOperation(f.ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("LockOperation(%s) = %v, want ErrNotFound (finished or gone)", id, err)
		}
	}
}
