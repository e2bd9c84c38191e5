package faults

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/infrastructuremanager"
)

// TestRestoreBaseBackup takes a base backup of the primary mid-load, lets
// the load go on, then restores the backup (the database as it was then)
// and starts keb on it. keb resumes every operation the backup holds, each
// finishing once; the Runtime CRs of instances accepted after the backup,
// which the restored database does not know, are exactly the orphans
// `keb cleanup environments --dry-run` reports.
func TestRestoreBaseBackup(t *testing.T) {
	faultsOnly(t)
	s := newStack(t, stackOptions{replicas: 1, accounts: 80, delay: 3 * time.Second, ha: true})
	load := s.startLoad("backup", loadShape{limit: 60, workers: 4, pace: 100 * time.Millisecond})
	s.waitForLoad(load, 2*time.Minute, "accepts before the backup", func() bool { return load.acceptedCount() >= 15 })
	backupDir := filepath.Join(s.dir, "backup")
	began := time.Now()
	s.ha.BaseBackup(backupDir)
	t.Logf("base backup of the primary under load took %s", time.Since(began).Round(time.Millisecond))
	// The backup is the database as of its end: accepts after that are
	// not in it.
	atEnd := load.acceptedCount()
	s.waitForLoad(load, 2*time.Minute, "accepts after the backup", func() bool { return load.acceptedCount() >= atEnd+10 })
	all := load.stop()

	// Every accepted instance's Runtime CR exists: those accepted after the
	// backup are unknown to it.
	waitFor(t, 2*time.Minute, "a Runtime CR for every accepted instance", func() bool {
		var rts infrastructuremanager.RuntimeList
		return s.kc.List(context.Background(), &rts) == nil && len(rts.Items) >= len(all)
	})

	// The restore: keb stops, the backup starts as the database.
	r := s.replicas[0]
	r.stop()
	restored := s.ha.Restore(backupDir)
	s.db.Close()
	var err error
	if s.db, err = pgxpool.New(context.Background(), restored.URL()); err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.Query(context.Background(), `SELECT instance_id, operation_id, type FROM operations`)
	if err != nil {
		t.Fatal(err)
	}
	held, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (accepted, error) {
		var a accepted
		err := row.Scan(&a.instanceID, &a.operationID, &a.kind)
		return a, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var inProgress int
	if err := s.db.QueryRow(context.Background(), `SELECT count(*) FROM operations WHERE state = 'in progress'`).Scan(&inProgress); err != nil {
		t.Fatal(err)
	}
	t.Logf("the backup holds %d of the %d accepted operations, %d of them in progress", len(held), len(all), inProgress)
	heldIDs := map[string]bool{}
	for _, op := range held {
		heldIDs[op.instanceID] = true
	}
	r.env = append(r.env, "APP_DATABASE_URL="+restored.URL()+"&application_name="+appName)
	r.start(t)

	s.expectSucceeded(held, 5*time.Minute)
	s.expectOnce(held)

	// Runtime CRs: one per restored instance; the others are orphans.
	var rts infrastructuremanager.RuntimeList
	if err := s.kc.List(context.Background(), &rts); err != nil {
		t.Fatal(err)
	}
	perInstance := map[string]int{}
	var unknown []string
	for _, rt := range rts.Items {
		id := rt.Labels["kyma-project.io/instance-id"]
		perInstance[id]++
		if !heldIDs[id] {
			unknown = append(unknown, id)
		}
	}
	for id := range heldIDs {
		if perInstance[id] != 1 {
			t.Errorf("restored instance %s has %d Runtime CRs", id, perInstance[id])
		}
	}
	cmd := exec.Command(kebBin, "cleanup", "environments", "--dry-run", "--max-age", "1ns", "--max-per-run", "1000")
	cmd.Env = append(os.Environ(), r.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("keb cleanup environments --dry-run: %v\n%s%s", err, out.String(), errOut.String())
	}
	var orphans []string
	for line := range strings.Lines(out.String()) {
		if f := strings.Fields(line); len(f) > 2 && strings.Contains(line, "delete orphan") {
			orphans = append(orphans, f[1])
		}
	}
	slices.Sort(orphans)
	slices.Sort(unknown)
	if !slices.Equal(orphans, unknown) {
		t.Errorf("keb cleanup environments --dry-run reports orphans %v, want the Runtime CRs unknown to the restored database %v\n%s", orphans, unknown, out.String())
	}
	t.Logf("%d Runtime CRs unknown to the restored database, all reported as orphans", len(unknown))
}
