-- +goose Up
-- What Lifecycle Manager reports on each runtime's Kyma CR, as keb's
-- control-plane watch sees it (process.KymaStates writes it from watch
-- events): the Kyma CR's status.state, each module's {name, state, message},
-- and the resourceVersion of the CR they were read from, so that a replica
-- whose watch lags never writes an older state over a newer one. NULL: no
-- Kyma CR (not created yet, deleted, or a runtime before this migration until
-- the watch's first list). Kept on instances, like state, so that
-- /info/runtimes filters and counts on an indexed column and GET instance
-- reads it with the instance row.
ALTER TABLE instances
    ADD COLUMN kyma_state text,
    ADD COLUMN kyma_modules jsonb,
    ADD COLUMN kyma_state_version bigint;
-- The listing's kyma_state filter reads this index in listing order, like
-- instances_state_created_idx; runtimes without a Kyma CR are not in it.
CREATE INDEX instances_kyma_state_created_idx ON instances (kyma_state, created_at, instance_id)
    WHERE kyma_state IS NOT NULL;

-- +goose Down
DROP INDEX instances_kyma_state_created_idx;
ALTER TABLE instances DROP COLUMN kyma_state, DROP COLUMN kyma_modules, DROP COLUMN kyma_state_version;
