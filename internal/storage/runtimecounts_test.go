package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kyma-keb/keb/internal/storage"
)

// keptVsReal compares, in one REPEATABLE READ snapshot, runtime_counts'
// and runtime_month_counts' sums with a real count of instances and the
// archive by the same dimensions (and creation month), and
// running_operation_counts' with a real count of running
// operations by plan and type, and returns the differences ("" when they
// agree).
func keptVsReal(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var diff []string
	err := pgx.BeginTxFunc(ctx, pool, storage.RuntimesTxOptions, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `WITH kept AS (
				SELECT plan_id, plan_name, provider_region, state, kyma_state, archived, sum(n) AS n FROM runtime_counts
				GROUP BY 1, 2, 3, 4, 5, 6),
			real AS (
				SELECT plan_id, plan_name, provider_region, state, kyma_state, false AS archived, count(*) AS n
				FROM instances GROUP BY 1, 2, 3, 4, 5
				UNION ALL
				SELECT plan_id, plan_name, provider_region, 'deprovisioned', NULL, true, count(*)
				FROM instances_archive GROUP BY 1, 2, 3)
			SELECT concat_ws('/', coalesce(k.plan_id, r.plan_id), coalesce(k.plan_name, r.plan_name),
				coalesce(k.provider_region, r.provider_region), coalesce(k.state, r.state),
				coalesce(k.kyma_state, r.kyma_state, '-'), coalesce(k.archived, r.archived)),
				coalesce(k.n, 0)::bigint, coalesce(r.n, 0)::bigint
			FROM kept k FULL JOIN real r ON (k.plan_id, k.plan_name, k.provider_region, k.state, k.archived) =
				(r.plan_id, r.plan_name, r.provider_region, r.state, r.archived) AND k.kyma_state IS NOT DISTINCT FROM r.kyma_state
			WHERE coalesce(k.n, 0) <> coalesce(r.n, 0)`)
		var key string
		var kept, real int64
		each := func() error {
			diff = append(diff, fmt.Sprintf("%s: kept %d, real %d", key, kept, real))
			return nil
		}
		if _, err := pgx.ForEachRow(rows, []any{&key, &kept, &real}, each); err != nil {
			return err
		}
		// By creation month (UTC) too, as pages by number place their
		// first row (runtime_month_counts, 00025).
		rows, _ = tx.Query(ctx, `WITH kept AS (
				SELECT created_month, plan_name, provider_region, state, kyma_state, archived, sum(n) AS n
				FROM runtime_month_counts GROUP BY 1, 2, 3, 4, 5, 6),
			real AS (
				SELECT date_trunc('month', created_at, 'UTC') AS created_month, plan_name, provider_region, state,
					kyma_state, false AS archived, count(*) AS n
				FROM instances GROUP BY 1, 2, 3, 4, 5
				UNION ALL
				SELECT date_trunc('month', instance_created_at, 'UTC'), plan_name, provider_region, 'deprovisioned', NULL,
					true, count(*)
				FROM instances_archive GROUP BY 1, 2, 3)
			SELECT concat_ws('/', 'month', to_char(coalesce(k.created_month, r.created_month) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'),
				coalesce(k.plan_name, r.plan_name), coalesce(k.provider_region, r.provider_region),
				coalesce(k.state, r.state), coalesce(k.kyma_state, r.kyma_state, '-'), coalesce(k.archived, r.archived)),
				coalesce(k.n, 0)::bigint, coalesce(r.n, 0)::bigint
			FROM kept k FULL JOIN real r ON (k.created_month, k.plan_name, k.provider_region, k.state, k.archived) =
				(r.created_month, r.plan_name, r.provider_region, r.state, r.archived) AND k.kyma_state IS NOT DISTINCT FROM r.kyma_state
			WHERE coalesce(k.n, 0) <> coalesce(r.n, 0)`)
		if _, err := pgx.ForEachRow(rows, []any{&key, &kept, &real}, each); err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `WITH kept AS (SELECT plan_id, type, sum(n) AS n FROM running_operation_counts GROUP BY 1, 2),
			real AS (SELECT i.plan_id, o.type, count(*) AS n FROM operations o JOIN instances i USING (instance_id)
				WHERE o.state = 'in progress' GROUP BY 1, 2)
			SELECT 'running/' || coalesce(k.plan_id, r.plan_id) || '/' || coalesce(k.type, r.type),
				coalesce(k.n, 0)::bigint, coalesce(r.n, 0)::bigint
			FROM kept k FULL JOIN real r USING (plan_id, type) WHERE coalesce(k.n, 0) <> coalesce(r.n, 0)`)
		_, err := pgx.ForEachRow(rows, []any{&key, &kept, &real}, each)
		return err
	})
	return strings.Join(diff, "\n"), err
}

// TestRuntimeCountsStayExact drives instances through the store's writes
// (accepts, batched by the accept path; finishing operations; Kyma states;
// deprovisionings archived and removed with their running operations; plan
// changes while an update runs; plain deletes) from
// several writers at once while a folder folds the deltas and a reader
// compares, snapshot after snapshot, the kept counts with a real count: they
// must agree in every snapshot, not only at the end, because the listing
// sums them in its own. At the end, the totals of /info/runtimes's filters
// that the kept counts serve equal real counts.
func TestRuntimeCountsStayExact(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := f.ctx
	const writers, perWriter = 6, 25
	plans := []string{"azure", "aws", "gcp"}
	regions := []string{"westeurope", "eastus"}
	done := make(chan struct{})
	var checks sync.WaitGroup
	checkErrs := make(chan error, 2)
	// repeat runs step until the writers are done or it fails.
	repeat := func(step func() error) {
		checks.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := step(); err != nil {
					checkErrs <- err
					return
				}
			}
		})
	}
	repeat(func() error { // the folder
		_, err := f.store.FoldRuntimeCounts(ctx)
		return err
	})
	snapshots := 0
	repeat(func() error { // the reader
		diff, err := keptVsReal(ctx, f.pool)
		if err == nil && diff != "" {
			err = fmt.Errorf("snapshot %d: kept counts differ from a real count:\n%s", snapshots, diff)
		}
		snapshots++
		return err
	})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for k := range perWriter {
				if err := lifecycle(ctx, f, w, k, plans[(w+k)%len(plans)], regions[k%len(regions)]); err != nil {
					errs <- fmt.Errorf("writer %d, instance %d: %w", w, k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	checks.Wait()
	close(errs)
	close(checkErrs)
	for err := range errs {
		t.Error(err)
	}
	for err := range checkErrs {
		t.Error(err)
	}
	t.Logf("%d snapshots compared while writing", snapshots)
	if snapshots == 0 {
		t.Error("the reader compared no snapshot while the writers wrote")
	}
	for _, fold := range []bool{false, true} {
		if fold {
			if _, err := f.store.FoldRuntimeCounts(ctx); err != nil {
				t.Fatal(err)
			}
			if n := f.count(`SELECT count(*) FROM (SELECT 1 FROM runtime_counts
				GROUP BY plan_id, plan_name, provider_region, state, kyma_state, archived HAVING count(*) > 1) d`); n != 0 {
				t.Errorf("after a fold, %d combinations have more than one row", n)
			}
			if n := f.count(`SELECT count(*) FROM (SELECT 1 FROM runtime_month_counts
				GROUP BY created_month, plan_name, provider_region, state, kyma_state, archived HAVING count(*) > 1) d`); n != 0 {
				t.Errorf("after a fold, %d combinations of a month have more than one row", n)
			}
		}
		diff, err := keptVsReal(ctx, f.pool)
		if err != nil {
			t.Fatal(err)
		}
		if diff != "" {
			t.Errorf("folded %v: kept counts differ from a real count:\n%s", fold, diff)
		}
		for _, tc := range []struct {
			q    storage.RuntimeQuery
			real string
		}{
			{storage.RuntimeQuery{}, `SELECT count(*) FROM instances WHERE state <> 'deprovisioned'`},
			{storage.RuntimeQuery{States: storage.RuntimeStates}, `SELECT (SELECT count(*) FROM instances) + (SELECT count(*) FROM instances_archive)`},
			{storage.RuntimeQuery{States: []storage.RuntimeState{storage.RuntimeDeprovisioned}},
				`SELECT (SELECT count(*) FROM instances WHERE state = 'deprovisioned') + (SELECT count(*) FROM instances_archive)`},
			{storage.RuntimeQuery{Plans: []string{"aws"}, Regions: []string{"eastus"}},
				`SELECT count(*) FROM instances WHERE plan_name = 'aws' AND provider_region = 'eastus' AND state <> 'deprovisioned'`},
			{storage.RuntimeQuery{Plans: []string{"gcp"}, States: storage.RuntimeStates},
				`SELECT (SELECT count(*) FROM instances WHERE plan_name = 'gcp') + (SELECT count(*) FROM instances_archive WHERE plan_name = 'gcp')`},
			{storage.RuntimeQuery{KymaStates: []string{"Ready", "Error"}, States: storage.RuntimeStates},
				`SELECT count(*) FROM instances WHERE kyma_state IN ('Ready', 'Error')`},
			{storage.RuntimeQuery{States: []storage.RuntimeState{storage.RuntimeSucceeded, storage.RuntimeFailed}, Regions: []string{"westeurope"}},
				`SELECT count(*) FROM instances WHERE state IN ('succeeded', 'failed') AND provider_region = 'westeurope'`},
		} {
			page, err := f.store.Runtimes(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if want := f.count(tc.real); page.Total != want {
				t.Errorf("folded %v: %+v: totalCount %d, a real count %d", fold, tc.q, page.Total, want)
			}
		}
	}
	if n := f.count(`SELECT count(*) FROM instances_archive`); n == 0 {
		t.Error("no instance was archived: the test does not cover the archive")
	}
}

// lifecycle is one instance's life, chosen by its number k: accepted, then
// provisioned (or failed), a Kyma state or two, a plan change, and a
// deprovisioning archived and removed, or a plain delete, or nothing more.
func lifecycle(ctx context.Context, f *fixture, w, k int, plan, region string) error {
	id := fmt.Sprintf("kc-%d-%d", w, k)
	inst := newInstance(id, fmt.Sprintf("ga-%d-%d", w, k), plan)
	inst.PlanID, inst.ProviderRegion = "plan-id-"+plan, region
	prov := newOperation("op-"+id, id, storage.OperationTypeProvision)
	if err := f.store.CreateProvisioning(ctx, inst, prov); err != nil {
		return err
	}
	if k%5 == 0 {
		return nil // stays provisioning
	}
	if _, err := f.store.SetRuntimeIdentity(ctx, id, storage.RuntimeIdentity{RuntimeID: "rt-" + id, ShootName: "c-" + id}); err != nil {
		return err
	}
	prov.State, prov.FinishedStages = storage.OperationSucceeded, []string{}
	if k%7 == 1 {
		prov.State = storage.OperationFailed
	}
	if _, err := f.store.Finish(ctx, prov); err != nil {
		return err
	}
	if k%6 >= 3 {
		// Created in an earlier month (keb never moves a creation time;
		// the counts by month must follow it anyway), and then deleted,
		// archived or left live below, by k%3.
		if _, err := f.pool.Exec(ctx, `UPDATE instances SET created_at = created_at - make_interval(days => $2)
			WHERE instance_id = $1`, id, 31*(1+w%3)); err != nil {
			return err
		}
	}
	for _, st := range []string{"Processing", "Ready", "Error"}[:1+k%3] {
		if _, err := f.store.SetKymaStates(ctx, []storage.KymaState{{RuntimeID: "rt-" + id, State: st}}); err != nil {
			return err
		}
	}
	if k%4 == 2 {
		// A plan change while an update runs: the running update moves
		// to the new plan.
		upd := newOperation("upd-"+id, id, storage.OperationTypeUpdate)
		if _, err := f.pool.Exec(ctx, `INSERT INTO operations (operation_id, instance_id, type, state, deadline, data)
			VALUES ($1, $2, $3, 'in progress', now(), '{}')`, upd.ID, id, upd.Type); err != nil {
			return err
		}
		if _, err := f.pool.Exec(ctx, `UPDATE instances SET plan_id = 'plan-id-aws', plan_name = 'aws' WHERE instance_id = $1`, id); err != nil {
			return err
		}
		if k%8 == 2 {
			upd.State, upd.FinishedStages = storage.OperationSucceeded, []string{}
			if _, err := f.store.Finish(ctx, upd); err != nil {
				return err
			}
		}
	}
	switch k % 3 {
	case 0:
		_, err := f.pool.Exec(ctx, `DELETE FROM instances WHERE instance_id = $1`, id)
		return err
	case 1:
		deprov := newOperation("deprov-"+id, id, storage.OperationTypeDeprovision)
		// With an update still running the deprovisioning is refused;
		// the instance is archived anyway, its update going with it.
		if _, _, err := f.store.CreateDeprovisioning(ctx, deprov); err != nil && !errors.Is(err, storage.ErrOperationInProgress) {
			return err
		}
		cur, err := f.store.Instance(ctx, id)
		if err != nil {
			return err
		}
		return f.store.ArchiveAndRemove(ctx, storage.ArchivedInstance{InstanceID: id, RuntimeID: "rt-" + id,
			GlobalAccountID: cur.GlobalAccountID, SubAccountID: cur.SubAccountID, PlanID: cur.PlanID, PlanName: cur.PlanName,
			PlatformRegion: cur.PlatformRegion, Provider: cur.Provider, ProviderRegion: cur.ProviderRegion,
			ShootName: "c-" + id, ProvisioningState: prov.State, LastDeprovisioningID: deprov.ID,
			InstanceCreatedAt: cur.CreatedAt, DeprovisioningStartedAt: time.Now()})
	}
	return nil
}
