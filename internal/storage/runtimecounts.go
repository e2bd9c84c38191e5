package storage

import (
	"context"
	"fmt"
	"time"
)

// RuntimeCountsFoldJob names the periodic job that runs FoldRuntimeCounts:
// it is stored in the queue, never rename it.
const RuntimeCountsFoldJob = "fold_runtime_counts"

// RuntimeCountsFoldInterval is how often the deltas are folded. Between
// two folds runtime_counts grows by one row per accepted or removed
// instance (a bulk statement: per combination) and two per state or Kyma
// state change (running_operation_counts likewise per operation started or
// ended), and every listing count and census sums them: at a
// thousand accepts a second, 30 s leaves some 30,000 rows to sum (a few
// milliseconds); at the rates a real fleet sees, a few hundred.
const RuntimeCountsFoldInterval = 30 * time.Second

// foldRuntimeCountsSQL replaces the deltas of runtime_counts,
// runtime_month_counts (00025: by creation month too) and
// running_operation_counts by one row per combination, in one statement: a
// snapshot sees either all the deltas or their sums, never both or neither,
// so every reader's sum stays exact while it runs. Each DELETE removes the
// rows its snapshot sees; deltas committed meanwhile stay, to be folded next
// time. Combinations that sum to zero are dropped. Two folds at once are
// exact too: the second skips the rows the first deleted and re-inserts the
// sums of the rest.
const foldRuntimeCountsSQL = `WITH deltas AS (DELETE FROM runtime_counts RETURNING *),
folded AS (INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
	SELECT plan_id, plan_name, provider_region, state, kyma_state, archived, sum(n) FROM deltas
	GROUP BY plan_id, plan_name, provider_region, state, kyma_state, archived HAVING sum(n) <> 0 RETURNING 1),
month_deltas AS (DELETE FROM runtime_month_counts RETURNING *),
month_folded AS (INSERT INTO runtime_month_counts (created_month, plan_name, provider_region, state, kyma_state, archived, n)
	SELECT created_month, plan_name, provider_region, state, kyma_state, archived, sum(n) FROM month_deltas
	GROUP BY created_month, plan_name, provider_region, state, kyma_state, archived HAVING sum(n) <> 0 RETURNING 1),
op_deltas AS (DELETE FROM running_operation_counts RETURNING *),
op_folded AS (INSERT INTO running_operation_counts (plan_id, type, n)
	SELECT plan_id, type, sum(n) FROM op_deltas GROUP BY plan_id, type HAVING sum(n) <> 0 RETURNING 1)
SELECT (SELECT count(*) FROM folded) + (SELECT count(*) FROM month_folded) + (SELECT count(*) FROM op_folded)`

// FoldRuntimeCounts folds the deltas of runtime_counts and
// running_operation_counts (migration 00023) and runtime_month_counts
// (00025) and returns how many rows were left.
func (s *Store) FoldRuntimeCounts(ctx context.Context) (int64, error) {
	var rows int64
	if err := s.pool.QueryRow(ctx, foldRuntimeCountsSQL).Scan(&rows); err != nil {
		return 0, fmt.Errorf("folding the runtime counts: %w", err)
	}
	return rows, nil
}
