-- +goose NO TRANSACTION
-- +goose Up
-- The index of 00020's subscription_secret_name, built without blocking the
-- writes of the replicas that serve meanwhile: CONCURRENTLY cannot run in a
-- transaction, so this migration has none, and each statement must be safe
-- to run again after a failure part-way (IF NOT EXISTS). A concurrent build
-- that fails (lock_timeout, a cancelled statement, a failover) leaves an
-- INVALID index behind, which IF NOT EXISTS would take for done: keb's
-- migrator drops such a leftover of its own indexes before every try
-- (storage.dropFailedIndexBuilds).
CREATE INDEX CONCURRENTLY IF NOT EXISTS instances_subscription_secret_name_idx ON instances (subscription_secret_name)
	WHERE subscription_secret_name IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS instances_subscription_secret_name_idx;
