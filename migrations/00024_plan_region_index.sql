-- +goose NO TRANSACTION
-- +goose Up
-- /info/runtimes filtered by plan and region: their rows in listing order
-- from one index, for the page and a page's boundary
-- (storage.indexIntersection). Intersecting instances_plan_created_idx and
-- instances_region_created_idx instead, the planner misestimated the
-- intersection at 1,000,000 instances (1 row for 62,553) and built and
-- sorted all of it with a parallel hash join for every page by number.
-- Plan and region never change with a state change, but a state change is
-- not a HOT update (state is indexed), so this index gets one more entry per
-- accept and per state or Kyma state change.
--
-- Built CONCURRENTLY (so without a transaction, and safe to run again after
-- a failure part-way: IF NOT EXISTS) so that the replicas serving meanwhile
-- keep writing instances while it builds.
CREATE INDEX CONCURRENTLY IF NOT EXISTS instances_plan_region_created_idx
	ON instances (plan_name, provider_region, created_at, instance_id);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS instances_plan_region_created_idx;
