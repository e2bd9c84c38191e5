package storage_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kyma-keb/keb/internal/storage"
)

// historyBetween gives inst-1 (deprovisioningInstance) the life between its
// provisioning and its deprovisioning: an update, a suspension, the
// unsuspension and a failed Kyma upgrade, each an hour apart, the
// provisioning five hours before the deprovisioning.
func (f *fixture) historyBetween() {
	f.t.Helper()
	f.exec(`UPDATE operations SET created_at = now() - interval '5 hours', updated_at = now() - interval '5 hours'
		WHERE operation_id = 'op-p'`)
	for _, op := range []struct {
		id, typ, state, errMsg string
		temporary              bool
		hoursAgo               int
	}{
		{"op-u", "update", "succeeded", "", false, 4},
		{"op-s", "deprovision", "succeeded", "", true, 3},
		{"op-un", "provision", "succeeded", "", false, 2},
		{"op-k", "upgrade_kyma", "failed", "the Kyma CR did not become Ready", false, 1},
	} {
		f.exec(`INSERT INTO operations (operation_id, instance_id, type, state, description, error_message, temporary,
			deadline, created_at, updated_at, finished_at)
			VALUES ($1, 'inst-1', $2, $3, $2||' ended', $4, $5, now(), now() - make_interval(hours => $6),
			now() - make_interval(hours => $6) + interval '10 minutes', now() - make_interval(hours => $6) + interval '10 minutes')`,
			op.id, op.typ, op.state, op.errMsg, op.temporary, op.hoursAgo)
	}
}

// TestArchiveKeepsOperations: an instance provisioned, updated, suspended,
// unsuspended, upgraded (failed) and deprovisioned keeps every one of its
// operations in the archive, oldest first, the deprovisioning as it ended;
// archiving again after a crash keeps them as the first archive wrote them.
func TestArchiveKeepsOperations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	a := f.deprovisioningInstance()
	f.historyBetween()
	a.DeprovisioningDescription = "Operation succeeded: the runtime is deprovisioned"

	if err := f.store.ArchiveAndRemove(f.ctx, a); err != nil {
		t.Fatalf("ArchiveAndRemove: %v", err)
	}
	check := func(when string) {
		t.Helper()
		h, err := f.store.ArchivedOperations(f.ctx, "inst-1")
		if err != nil {
			t.Fatalf("%s: ArchivedOperations: %v", when, err)
		}
		if !h.Kept || h.LeftOut != 0 {
			t.Errorf("%s: kept %v, left out %d; want kept, none left out", when, h.Kept, h.LeftOut)
		}
		var got []string
		for _, op := range h.Operations {
			got = append(got, fmt.Sprintf("%s %s %s temporary=%v %q %q", op.ID, op.Type, op.State, op.Temporary, op.Description, op.Error))
		}
		want := []string{
			`op-p provision succeeded temporary=false "" ""`,
			`op-u update succeeded temporary=false "update ended" ""`,
			`op-s deprovision succeeded temporary=true "deprovision ended" ""`,
			`op-un provision succeeded temporary=false "provision ended" ""`,
			`op-k upgrade_kyma failed temporary=false "upgrade_kyma ended" "the Kyma CR did not become Ready"`,
			`op-d deprovision succeeded temporary=false "Operation succeeded: the runtime is deprovisioned" ""`,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: archived operations:\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, op := range h.Operations {
			if op.CreatedAt.IsZero() || op.UpdatedAt.Before(op.CreatedAt) {
				t.Errorf("%s: %s created %v, updated %v", when, op.ID, op.CreatedAt, op.UpdatedAt)
			}
		}
	}
	check("archived")

	// The step run again after a crash that came after the commit: the
	// operations are gone from the operations table, the archive keeps
	// what the first run read.
	if err := f.store.ArchiveAndRemove(f.ctx, a); err != nil {
		t.Fatalf("second ArchiveAndRemove: %v", err)
	}
	check("archived again")
}

// TestArchiveKeepsOperationsAfterFailedAttempt: an archive whose transaction
// failed (a crash before the commit is the same) wrote nothing; the retry
// keeps every operation.
func TestArchiveKeepsOperationsAfterFailedAttempt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	a := f.deprovisioningInstance()
	f.historyBetween()
	f.exec(`CREATE TABLE pin (instance_id text REFERENCES instances (instance_id))`)
	f.exec(`INSERT INTO pin VALUES ('inst-1')`)
	if err := f.store.ArchiveAndRemove(f.ctx, a); err == nil {
		t.Fatal("ArchiveAndRemove with the instance pinned succeeded, want the removal's error")
	}
	if _, err := f.store.ArchivedOperations(f.ctx, "inst-1"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("ArchivedOperations after the failed attempt = %v, want ErrNotFound", err)
	}
	f.exec(`DROP TABLE pin`)
	if err := f.store.ArchiveAndRemove(f.ctx, a); err != nil {
		t.Fatalf("retry: %v", err)
	}
	h, err := f.store.ArchivedOperations(f.ctx, "inst-1")
	if err != nil || len(h.Operations) != 6 {
		t.Fatalf("ArchivedOperations after the retry = %d operations, %v; want 6", len(h.Operations), err)
	}
}

// TestArchiveBoundsOperations: an instance with a long life keeps the newest
// MaxArchivedOperations operations and the count of the others, and no
// description or error longer than the bound.
func TestArchiveBoundsOperations(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	a := f.deprovisioningInstance()
	f.exec(`UPDATE operations SET created_at = now() - interval '1000 hours' WHERE operation_id = 'op-p'`)
	// 150 updates, one an hour, each failed with an error of 100000 characters.
	f.exec(`INSERT INTO operations (operation_id, instance_id, type, state, description, error_message, deadline, created_at)
		SELECT 'op-u'||n, 'inst-1', 'update', 'failed', repeat('d', 100000), repeat('e', 100000), now(),
		now() - make_interval(hours => 200 - n) FROM generate_series(1, 150) n`)
	if err := f.store.ArchiveAndRemove(f.ctx, a); err != nil {
		t.Fatalf("ArchiveAndRemove: %v", err)
	}
	h, err := f.store.ArchivedOperations(f.ctx, "inst-1")
	if err != nil {
		t.Fatal(err)
	}
	// 152 operations: the provisioning, 150 updates, the deprovisioning.
	if len(h.Operations) != storage.MaxArchivedOperations || h.LeftOut != 152-storage.MaxArchivedOperations {
		t.Fatalf("%d operations kept, %d left out; want %d and %d", len(h.Operations), h.LeftOut,
			storage.MaxArchivedOperations, 152-storage.MaxArchivedOperations)
	}
	if first, last := h.Operations[0].ID, h.Operations[len(h.Operations)-1].ID; first != "op-u52" || last != "op-d" {
		t.Errorf("kept %s to %s, want the newest: op-u52 to op-d", first, last)
	}
	for _, op := range h.Operations {
		if len(op.Description) > 2000 || len(op.Error) > 2000 {
			t.Fatalf("%s kept with a description of %d and an error of %d characters, want at most 2000",
				op.ID, len(op.Description), len(op.Error))
		}
	}
	if n := f.count(`SELECT pg_column_size(operations) FROM instances_archive WHERE instance_id = 'inst-1'`); n > 1<<20 {
		t.Errorf("archived operations take %d bytes, want under 1 MiB", n)
	}
}

// TestArchivedOperationsOfEarlierKeb: a row archived by a keb that kept no
// operations reads as not kept, with no error; an instance never archived
// is not found.
func TestArchivedOperationsOfEarlierKeb(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.exec(`INSERT INTO instances_archive (instance_id, runtime_id, global_account_id, subaccount_id, plan_id,
		plan_name, platform_region, provider, provider_region, last_deprovisioning_id, instance_created_at,
		deprovisioning_started_at) VALUES ('old', 'rt', 'ga', 'sa', 'p', 'azure', 'cf-eu10', 'azure',
		'westeurope', 'op-d-old', now(), now())`)
	h, err := f.store.ArchivedOperations(f.ctx, "old")
	if err != nil || h.Kept || len(h.Operations) != 0 {
		t.Errorf("ArchivedOperations of an earlier keb's row = %+v, %v; want not kept, no error", h, err)
	}
	if _, err := f.store.ArchivedOperations(f.ctx, "never"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("ArchivedOperations of an unknown instance = %v, want ErrNotFound", err)
	}
}
