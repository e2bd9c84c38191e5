-- +goose Up
-- Runtimes counted as they are written, so that /info/runtimes's totalCount
-- and the metrics census read no fleet-sized index: at 1,000,000 instances
-- counting the matching keys of every listing page took 24 ms of backend CPU
-- (unfiltered) and the census's count by plan and state 0.56 s.
--
-- Each row is a delta: n runtimes (negative: removed) with these values of
-- the listing's and the census's dimensions. The triggers below append rows
-- in the writing transaction and never update one, so concurrent writers
-- share no row (no lock, no hot row on the accept path), and a reader sums
-- the rows its snapshot sees: exactly the runtimes that snapshot sees.
-- storage.Store.FoldRuntimeCounts folds the deltas into one row per
-- combination, periodically, so that the sum reads a few hundred rows.
-- archived rows are instances_archive's (state deprovisioned, no Kyma state);
-- the others are instances'.
CREATE TABLE runtime_counts (
    plan_id         text NOT NULL,
    plan_name       text NOT NULL,
    provider_region text NOT NULL,
    state           text NOT NULL,
    kyma_state      text,
    archived        boolean NOT NULL,
    n               bigint NOT NULL
);

-- Inserts and deletes are counted per statement from their transition
-- tables (a bulk load or a bulk delete appends one row per combination, not
-- per runtime); an update per row, and only when it changes a counted column
-- (the WHEN clause is evaluated without calling the function: the accept
-- path's other updates of instances cost nothing more).
-- +goose StatementBegin
CREATE FUNCTION runtime_counts_live_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    SELECT plan_id, plan_name, provider_region, state, kyma_state, false, count(*)
    FROM new_rows GROUP BY plan_id, plan_name, provider_region, state, kyma_state;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION runtime_counts_live_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    SELECT plan_id, plan_name, provider_region, state, kyma_state, false, -count(*)
    FROM old_rows GROUP BY plan_id, plan_name, provider_region, state, kyma_state;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION runtime_counts_live_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    VALUES (OLD.plan_id, OLD.plan_name, OLD.provider_region, OLD.state, OLD.kyma_state, false, -1),
           (NEW.plan_id, NEW.plan_name, NEW.provider_region, NEW.state, NEW.kyma_state, false, 1);
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION runtime_counts_archive_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    SELECT plan_id, plan_name, provider_region, 'deprovisioned', NULL, true, count(*)
    FROM new_rows GROUP BY plan_id, plan_name, provider_region;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION runtime_counts_archive_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    SELECT plan_id, plan_name, provider_region, 'deprovisioned', NULL, true, -count(*)
    FROM old_rows GROUP BY plan_id, plan_name, provider_region;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- archive rows are never updated in a counted column (only leftovers), so
-- the archive has no update trigger. A TRUNCATE (tests, a restore) empties
-- the table's share of the counts in the same transaction.
-- +goose StatementBegin
CREATE FUNCTION runtime_counts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM runtime_counts WHERE archived = (TG_TABLE_NAME = 'instances_archive');
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER runtime_counts_inserted AFTER INSERT ON instances
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_live_inserted();
CREATE TRIGGER runtime_counts_deleted AFTER DELETE ON instances
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_live_deleted();
CREATE TRIGGER runtime_counts_changed AFTER UPDATE ON instances FOR EACH ROW
    WHEN (OLD.plan_id IS DISTINCT FROM NEW.plan_id OR OLD.plan_name IS DISTINCT FROM NEW.plan_name
        OR OLD.provider_region IS DISTINCT FROM NEW.provider_region OR OLD.state IS DISTINCT FROM NEW.state
        OR OLD.kyma_state IS DISTINCT FROM NEW.kyma_state)
    EXECUTE FUNCTION runtime_counts_live_changed();
CREATE TRIGGER runtime_counts_truncated AFTER TRUNCATE ON instances
    FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_truncated();
CREATE TRIGGER runtime_counts_inserted AFTER INSERT ON instances_archive
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_archive_inserted();
CREATE TRIGGER runtime_counts_deleted AFTER DELETE ON instances_archive
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_archive_deleted();
CREATE TRIGGER runtime_counts_truncated AFTER TRUNCATE ON instances_archive
    FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_truncated();

-- The runtimes already there. CREATE TRIGGER holds a SHARE ROW EXCLUSIVE
-- lock on each table until this transaction commits, so no write commits
-- between the triggers' creation and the snapshot these statements read:
-- every runtime is counted once, here or by a trigger. Writers wait for the
-- commit meanwhile (an index-only scan of instances_census_idx and of the
-- archive: about a second at 1,000,000 instances); lock_timeout bounds the
-- wait for the locks themselves.
INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
SELECT plan_id, plan_name, provider_region, state, kyma_state, false, count(*)
FROM instances GROUP BY plan_id, plan_name, provider_region, state, kyma_state;
INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
SELECT plan_id, plan_name, provider_region, 'deprovisioned', NULL, true, count(*)
FROM instances_archive GROUP BY plan_id, plan_name, provider_region;

-- +goose Down
DROP TRIGGER runtime_counts_inserted ON instances;
DROP TRIGGER runtime_counts_deleted ON instances;
DROP TRIGGER runtime_counts_changed ON instances;
DROP TRIGGER runtime_counts_truncated ON instances;
DROP TRIGGER runtime_counts_inserted ON instances_archive;
DROP TRIGGER runtime_counts_deleted ON instances_archive;
DROP TRIGGER runtime_counts_truncated ON instances_archive;
DROP FUNCTION runtime_counts_live_inserted();
DROP FUNCTION runtime_counts_live_deleted();
DROP FUNCTION runtime_counts_live_changed();
DROP FUNCTION runtime_counts_archive_inserted();
DROP FUNCTION runtime_counts_archive_deleted();
DROP FUNCTION runtime_counts_truncated();
DROP TABLE runtime_counts;
