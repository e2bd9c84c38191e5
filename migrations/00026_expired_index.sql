-- +goose NO TRANSACTION
-- +goose Up
-- /info/runtimes?expired=true (upstream's option): the expired trial and free
-- runtimes in listing order, for the page, a page's boundary and the count
-- (storage.selectiveFilter). Partial: only expired instances are in it, a
-- small part of the fleet, and an instance enters it once, when it expires.
--
-- Built CONCURRENTLY (so without a transaction, and safe to run again after
-- a failure part-way: IF NOT EXISTS) so that the replicas serving meanwhile
-- keep writing instances while it builds.
CREATE INDEX CONCURRENTLY IF NOT EXISTS instances_expired_created_idx
	ON instances (created_at, instance_id) WHERE expired_at IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS instances_expired_created_idx;
