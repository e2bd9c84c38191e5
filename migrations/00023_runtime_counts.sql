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

-- Operations in progress by the plan of their instance and their type, for
-- the census, kept the same way: at 1,000,000 instances the census read each
-- running operation and probed its instance (0.67 s of backend CPU for the
-- load tool's 99,610). An operation's plan is its instance's current plan:
-- a plan change moves the instance's running operations with it.
CREATE TABLE running_operation_counts (
    plan_id text NOT NULL,
    type    text NOT NULL,
    n       bigint NOT NULL
);

-- Inserts and deletes are counted per statement from their transition
-- tables (a bulk load or a bulk delete appends one row per combination, not
-- per runtime; each table's insert and delete triggers share a function,
-- their transition table named changed_rows in both, TG_OP giving the sign); an update per row, and only when it changes a counted column
-- (the WHEN clause is evaluated without calling the function: the accept
-- path's other updates of instances cost nothing more).
-- +goose StatementBegin
CREATE FUNCTION runtime_counts_live_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    SELECT plan_id, plan_name, provider_region, state, kyma_state, false,
        CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END * count(*)
    FROM changed_rows GROUP BY plan_id, plan_name, provider_region, state, kyma_state;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION runtime_counts_live_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    VALUES (OLD.plan_id, OLD.plan_name, OLD.provider_region, OLD.state, OLD.kyma_state, false, -1),
           (NEW.plan_id, NEW.plan_name, NEW.provider_region, NEW.state, NEW.kyma_state, false, 1);
    IF OLD.plan_id IS DISTINCT FROM NEW.plan_id THEN
        INSERT INTO running_operation_counts (plan_id, type, n)
        SELECT p.plan_id, o.type, p.sign * count(*)
        FROM operations o, (VALUES (OLD.plan_id, -1), (NEW.plan_id, 1)) AS p(plan_id, sign)
        WHERE o.instance_id = NEW.instance_id AND o.state = 'in progress' GROUP BY p.plan_id, p.sign, o.type;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- An instance's running operations leave the counts with it, before it is
-- deleted: its operations go with it (ON DELETE CASCADE), and their own
-- delete trigger, finding no instance any more, counts nothing. Any write of
-- an operation's state holds its instance's row lock (Store.Finish updates
-- the instance in the same statement, CreateDeprovisioning locks it, a new
-- operation's foreign key check KEY SHARE-locks it), which this delete
-- waits for before the trigger reads the operations with a fresh snapshot.
-- +goose StatementBegin
CREATE FUNCTION running_operation_counts_instance_deleting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO running_operation_counts (plan_id, type, n)
    SELECT OLD.plan_id, type, -count(*) FROM operations
    WHERE instance_id = OLD.instance_id AND state = 'in progress' GROUP BY type;
    RETURN OLD;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION running_operation_counts_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO running_operation_counts (plan_id, type, n)
    SELECT i.plan_id, o.type, CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END * count(*)
    FROM changed_rows o JOIN instances i ON i.instance_id = o.instance_id
    WHERE o.state = 'in progress' GROUP BY i.plan_id, o.type;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION running_operation_counts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO running_operation_counts (plan_id, type, n)
    SELECT i.plan_id, c.type, c.n FROM instances i,
        (VALUES (OLD.type, CASE WHEN OLD.state = 'in progress' THEN -1 ELSE 0 END),
                (NEW.type, CASE WHEN NEW.state = 'in progress' THEN 1 ELSE 0 END)) AS c(type, n)
    WHERE i.instance_id = NEW.instance_id AND c.n <> 0;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION runtime_counts_archive_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
    SELECT plan_id, plan_name, provider_region, 'deprovisioned', NULL, true,
        CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END * count(*)
    FROM changed_rows GROUP BY plan_id, plan_name, provider_region;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- archive rows are never updated in a counted column (only leftovers), so
-- the archive has no update trigger. A TRUNCATE (tests, a restore) empties
-- the table's share of the counts in the same transaction (truncating
-- instances truncates operations too: their foreign key).
-- +goose StatementBegin
CREATE FUNCTION runtime_counts_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'operations' THEN
        DELETE FROM running_operation_counts;
    ELSE
        DELETE FROM runtime_counts WHERE archived = (TG_TABLE_NAME = 'instances_archive');
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER runtime_counts_inserted AFTER INSERT ON instances
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_live_rows();
CREATE TRIGGER runtime_counts_deleted AFTER DELETE ON instances
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_live_rows();
CREATE TRIGGER runtime_counts_changed AFTER UPDATE ON instances FOR EACH ROW
    WHEN (OLD.plan_id IS DISTINCT FROM NEW.plan_id OR OLD.plan_name IS DISTINCT FROM NEW.plan_name
        OR OLD.provider_region IS DISTINCT FROM NEW.provider_region OR OLD.state IS DISTINCT FROM NEW.state
        OR OLD.kyma_state IS DISTINCT FROM NEW.kyma_state)
    EXECUTE FUNCTION runtime_counts_live_changed();
CREATE TRIGGER runtime_counts_truncated AFTER TRUNCATE ON instances
    FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_truncated();
CREATE TRIGGER running_operation_counts_deleting BEFORE DELETE ON instances FOR EACH ROW
    EXECUTE FUNCTION running_operation_counts_instance_deleting();
CREATE TRIGGER running_operation_counts_inserted AFTER INSERT ON operations
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION running_operation_counts_rows();
CREATE TRIGGER running_operation_counts_deleted AFTER DELETE ON operations
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION running_operation_counts_rows();
CREATE TRIGGER running_operation_counts_changed AFTER UPDATE ON operations FOR EACH ROW
    WHEN ((OLD.state = 'in progress') IS DISTINCT FROM (NEW.state = 'in progress')
        OR (NEW.state = 'in progress' AND (OLD.type IS DISTINCT FROM NEW.type OR OLD.instance_id IS DISTINCT FROM NEW.instance_id)))
    EXECUTE FUNCTION running_operation_counts_changed();
CREATE TRIGGER runtime_counts_inserted AFTER INSERT ON instances_archive
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_archive_rows();
CREATE TRIGGER runtime_counts_deleted AFTER DELETE ON instances_archive
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_archive_rows();
CREATE TRIGGER runtime_counts_truncated AFTER TRUNCATE ON instances_archive
    FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_truncated();
CREATE TRIGGER runtime_counts_truncated AFTER TRUNCATE ON operations
    FOR EACH STATEMENT EXECUTE FUNCTION runtime_counts_truncated();

-- The runtimes and running operations already there. CREATE TRIGGER holds
-- a SHARE ROW EXCLUSIVE lock on each table until this transaction commits,
-- so no write commits between the triggers' creation and the snapshot these
-- statements read: every runtime is counted once, here or by a trigger. Writers wait for the
-- commit meanwhile (a scan of instances, the archive and the running
-- operations: 4 s at 1,000,000 instances on a busy 2-core machine,
-- docs/performance.md); lock_timeout bounds the wait for the locks
-- themselves.
INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
SELECT plan_id, plan_name, provider_region, state, kyma_state, false, count(*)
FROM instances GROUP BY plan_id, plan_name, provider_region, state, kyma_state;
INSERT INTO runtime_counts (plan_id, plan_name, provider_region, state, kyma_state, archived, n)
SELECT plan_id, plan_name, provider_region, 'deprovisioned', NULL, true, count(*)
FROM instances_archive GROUP BY plan_id, plan_name, provider_region;
INSERT INTO running_operation_counts (plan_id, type, n)
SELECT i.plan_id, o.type, count(*) FROM operations o JOIN instances i ON i.instance_id = o.instance_id
WHERE o.state = 'in progress' GROUP BY i.plan_id, o.type;

-- +goose Down
DROP TRIGGER running_operation_counts_deleting ON instances;
DROP TRIGGER running_operation_counts_inserted ON operations;
DROP TRIGGER running_operation_counts_deleted ON operations;
DROP TRIGGER running_operation_counts_changed ON operations;
DROP FUNCTION running_operation_counts_instance_deleting();
DROP FUNCTION running_operation_counts_rows();
DROP FUNCTION running_operation_counts_changed();
DROP TABLE running_operation_counts;
DROP TRIGGER runtime_counts_inserted ON instances;
DROP TRIGGER runtime_counts_deleted ON instances;
DROP TRIGGER runtime_counts_changed ON instances;
DROP TRIGGER runtime_counts_truncated ON instances;
DROP TRIGGER runtime_counts_inserted ON instances_archive;
DROP TRIGGER runtime_counts_deleted ON instances_archive;
DROP TRIGGER runtime_counts_truncated ON instances_archive;
DROP TRIGGER runtime_counts_truncated ON operations;
DROP FUNCTION runtime_counts_live_rows();
DROP FUNCTION runtime_counts_live_changed();
DROP FUNCTION runtime_counts_archive_rows();
DROP FUNCTION runtime_counts_truncated();
DROP TABLE runtime_counts;
