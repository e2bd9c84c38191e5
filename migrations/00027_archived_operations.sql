-- +goose Up
-- A deprovisioned instance's history: the archive step deletes the instance
-- with all its operations, so the archive keeps a compact record of them
-- (id, type, state, suspension flag, created and updated times, description
-- and error, each text cut short), written by Store.ArchiveAndRemove in the
-- transaction that deletes them. Bounded: the newest 100 operations, and how
-- many older ones were left out. NULL: archived by a keb before this column,
-- whose console shows what the summary row keeps.
ALTER TABLE instances_archive
    ADD COLUMN operations jsonb,
    ADD COLUMN operations_left_out integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE instances_archive DROP COLUMN operations, DROP COLUMN operations_left_out;
