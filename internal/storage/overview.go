package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Overview is what the console's overview page draws: the fleet's counts
// and what its operations did since a moment. It is read in one read-only
// snapshot, so its figures agree with each other.
type Overview struct {
	// Runtimes counts live runtimes by plan, region, state and Kyma state.
	Runtimes []RuntimeCount
	// Operations counts the operations accepted per bucket, by type and state.
	Operations []OperationBucket
	// Failures counts the operations accepted since and failed, by the step
	// they failed in and the component it depends on.
	Failures []FailureCount
	// FailedRuntimes counts the runtimes in state failed now, by the step
	// and component of the operation that failed them.
	FailedRuntimes []FailureCount
	// Steps are each step's durations (its first start to the next step's
	// start or the operation's end: waits and retries included) in the
	// operations accepted since.
	Steps []StepDurations
	// Provisioning is the duration of the provisionings accepted since and
	// succeeded: count, and p50, p90, p99 in seconds.
	Provisioning Percentiles
	// Parameters counts the live instances that set each top-level
	// provisioning parameter.
	Parameters []ParameterCount
	// Instances is how many live instances there are (the parameters' base).
	Instances int
}

// RuntimeCount is one group of live runtimes.
type RuntimeCount struct {
	Plan, Region, State, KymaState string
	N                              int
}

// OperationBucket is one bucket of the operations chart.
type OperationBucket struct {
	Start       time.Time
	Type, State string
	N           int
}

// FailureCount is one group of failed operations or runtimes.
type FailureCount struct {
	Step, Category string
	N              int
	// Example is one of the group's error messages.
	Example string
}

// StepDurations are one step's durations in seconds.
type StepDurations struct {
	Type, Step    string
	Count         int
	P50, P95, Max float64
}

// Percentiles are a duration's count and percentiles in seconds.
type Percentiles struct {
	Count         int
	P50, P90, P99 float64
}

// ParameterCount is how many live instances set a parameter.
type ParameterCount struct {
	Name string
	N    int
}

// The overview's statements. Each reads what it counts, never the fleet's
// operations: the window's operations through operations_created_at_idx,
// the failed runtimes through instances_state_created_idx and their last
// operation through operations_instance_created_idx; the fleet's counts are
// sums of runtime_counts (migration 00023). Only the parameters read every
// live instance's parameters (the whole instances table): the console
// caches the overview, so that costs one scan a minute at most.
const (
	overviewRuntimesSQL = `SELECT plan_name, provider_region, state, coalesce(kyma_state, ''), sum(n)::bigint
		FROM runtime_counts WHERE NOT archived GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0`
	overviewOperationsSQL = `SELECT date_bin($2::interval, created_at, $1), type, state, count(*)
		FROM operations WHERE created_at >= $1 GROUP BY 1, 2, 3`
	overviewFailuresSQL = `SELECT stage, coalesce(data->>'errorCategory', ''), count(*), max(left(error_message, 300))
		FROM operations WHERE created_at >= $1 AND state = 'failed' GROUP BY 1, 2`
	overviewFailedRuntimesSQL = `SELECT o.stage, coalesce(o.data->>'errorCategory', ''), count(*), max(left(o.error_message, 300))
		FROM instances i CROSS JOIN LATERAL (SELECT stage, data, error_message FROM operations
			WHERE instance_id = i.instance_id ORDER BY created_at DESC LIMIT 1) o
		WHERE i.state = 'failed' GROUP BY 1, 2`
	// stepStartedAt holds each step's first run; a step ends when the next
	// one starts, the last one when the operation finished (still running:
	// not counted). Each operation's few steps are ordered on their own
	// (a lateral subquery), not all the window's steps in one sort.
	overviewStepsSQL = `WITH durations AS (
			SELECT o.type, d.step, d.secs FROM operations o CROSS JOIN LATERAL (
				SELECT s.key AS step, extract(epoch FROM coalesce(lead(s.value::timestamptz) OVER (ORDER BY s.value::timestamptz),
					o.finished_at) - s.value::timestamptz)::float8 AS secs
				FROM jsonb_each_text(CASE jsonb_typeof(o.data->'stepStartedAt')
					WHEN 'object' THEN o.data->'stepStartedAt' ELSE '{}' END) s) d
			WHERE o.created_at >= $1)
		SELECT type, step, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY secs),
			percentile_cont(0.95) WITHIN GROUP (ORDER BY secs), max(secs)
		FROM durations WHERE secs IS NOT NULL GROUP BY 1, 2`
	overviewProvisioningSQL = `SELECT count(*), coalesce(percentile_cont(ARRAY[0.5, 0.9, 0.99]) WITHIN GROUP
			(ORDER BY extract(epoch FROM finished_at - created_at)::float8), ARRAY[0, 0, 0]::float8[])
		FROM operations WHERE created_at >= $1 AND type = 'provision' AND state = 'succeeded' AND finished_at IS NOT NULL`
	overviewParametersSQL = `SELECT k, count(*) FROM instances, jsonb_object_keys(CASE jsonb_typeof(parameters)
			WHEN 'object' THEN parameters ELSE '{}' END) k GROUP BY k`
	overviewInstancesSQL = `SELECT coalesce(sum(n), 0)::bigint FROM runtime_counts WHERE NOT archived`
)

// Overview reads the fleet's counts and what operations accepted since
// did, operations counted per bucket.
func (s *Store) Overview(ctx context.Context, since time.Time, bucket time.Duration) (Overview, error) {
	var o Overview
	err := pgx.BeginTxFunc(ctx, s.pool, RuntimesTxOptions, func(tx pgx.Tx) error {
		// No JIT: the planner overestimates the steps' rows (a hundred per
		// operation) and would compile them for longer than they take.
		if _, err := tx.Exec(ctx, RuntimesTxSettings); err != nil {
			return fmt.Errorf("setting up the overview's transaction: %w", err)
		}
		rows, _ := tx.Query(ctx, overviewRuntimesSQL)
		var err error
		if o.Runtimes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (RuntimeCount, error) {
			var c RuntimeCount
			return c, row.Scan(&c.Plan, &c.Region, &c.State, &c.KymaState, &c.N)
		}); err != nil {
			return fmt.Errorf("counting runtimes: %w", err)
		}
		rows, _ = tx.Query(ctx, overviewOperationsSQL, since, bucket)
		if o.Operations, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (OperationBucket, error) {
			var b OperationBucket
			return b, row.Scan(&b.Start, &b.Type, &b.State, &b.N)
		}); err != nil {
			return fmt.Errorf("counting operations per %s: %w", bucket, err)
		}
		failures := func(query string, args ...any) ([]FailureCount, error) {
			rows, _ := tx.Query(ctx, query, args...)
			return pgx.CollectRows(rows, func(row pgx.CollectableRow) (FailureCount, error) {
				var f FailureCount
				return f, row.Scan(&f.Step, &f.Category, &f.N, &f.Example)
			})
		}
		if o.Failures, err = failures(overviewFailuresSQL, since); err != nil {
			return fmt.Errorf("counting failed operations: %w", err)
		}
		if o.FailedRuntimes, err = failures(overviewFailedRuntimesSQL); err != nil {
			return fmt.Errorf("counting failed runtimes: %w", err)
		}
		rows, _ = tx.Query(ctx, overviewStepsSQL, since)
		if o.Steps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (StepDurations, error) {
			var d StepDurations
			return d, row.Scan(&d.Type, &d.Step, &d.Count, &d.P50, &d.P95, &d.Max)
		}); err != nil {
			return fmt.Errorf("measuring step durations: %w", err)
		}
		var ps []float64
		if err := tx.QueryRow(ctx, overviewProvisioningSQL, since).Scan(&o.Provisioning.Count, &ps); err != nil {
			return fmt.Errorf("measuring provisioning durations: %w", err)
		}
		if len(ps) == 3 {
			o.Provisioning.P50, o.Provisioning.P90, o.Provisioning.P99 = ps[0], ps[1], ps[2]
		}
		rows, _ = tx.Query(ctx, overviewParametersSQL)
		if o.Parameters, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ParameterCount, error) {
			var p ParameterCount
			return p, row.Scan(&p.Name, &p.N)
		}); err != nil {
			return fmt.Errorf("counting parameters: %w", err)
		}
		if err := tx.QueryRow(ctx, overviewInstancesSQL).Scan(&o.Instances); err != nil {
			return fmt.Errorf("counting instances: %w", err)
		}
		return nil
	})
	return o, err
}

// TargetCounts counts the runtimes of each orchestration by their state
// (an index scan of orchestration_operations_list_idx per orchestration).
func (s *Orchestrations) TargetCounts(ctx context.Context, ids []string) (map[string]map[TargetState]int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT orchestration_id, state, count(*) FROM orchestration_operations
		WHERE orchestration_id = ANY($1) GROUP BY 1, 2`, nonNil(ids))
	out := map[string]map[TargetState]int{}
	var id string
	var state TargetState
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&id, &state, &n}, func() error {
		if out[id] == nil {
			out[id] = map[TargetState]int{}
		}
		out[id][state] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("counting the runtimes of orchestrations: %w", err)
	}
	return out, nil
}
