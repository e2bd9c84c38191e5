-- +goose Up
-- The runtime listing (/info/runtimes) orders live and archived instances by
-- (created_at, instance_id) and pages by keyset on it; instances has that
-- index already (instances_created_at_idx), the archive gets its twin so the
-- UNION ALL of both can be merged in order and stopped after one page.
CREATE INDEX instances_archive_created_idx ON instances_archive (instance_created_at, instance_id);
-- Filters by subaccount, region and plan on the archive are rare; by account
-- there is instances_archive_global_account_idx.

-- +goose Down
DROP INDEX instances_archive_created_idx;
