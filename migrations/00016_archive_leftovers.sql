-- +goose Up
-- A deprovisioning no longer fails when a step that removes something inside
-- or around the runtime (its bindings, its Kyma CR, its account's claim)
-- cannot finish: the step is skipped after a bounded retry and the cluster is
-- deleted all the same (process.SkippableStep). What such steps left behind
-- is kept with the archived instance, for /info/runtimes, for last_operation
-- (deprovisioning_description is what the deprovisioning said when it ended)
-- and for the leader's job that retries the leftovers later. NULL: nothing
-- was left.
ALTER TABLE instances_archive
    ADD COLUMN leftovers jsonb,
    ADD COLUMN deprovisioning_description text NOT NULL DEFAULT '';
-- The retry job reads the archived instances that still have leftovers, the
-- oldest attempt first.
CREATE INDEX instances_archive_leftovers_idx ON instances_archive (archived_at, instance_id)
    WHERE leftovers IS NOT NULL;

-- +goose Down
DROP INDEX instances_archive_leftovers_idx;
ALTER TABLE instances_archive DROP COLUMN leftovers, DROP COLUMN deprovisioning_description;
