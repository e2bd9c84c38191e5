-- +goose Up
-- Upgrades are operations of the instance like any other: they take its
-- operation slot (operations_one_active_per_instance), so a DELETE or PATCH
-- during an upgrade is refused with 422 and an upgrade never overlaps a
-- provisioning or deprovisioning.
ALTER TABLE operations DROP CONSTRAINT operations_type_check;
ALTER TABLE operations ADD CONSTRAINT operations_type_check
    CHECK (type IN ('provision', 'deprovision', 'update', 'upgrade_kyma', 'upgrade_cluster'));
-- orchestration_id links an upgrade to the orchestration that started it; the
-- partial index counts an orchestration's upgrades in flight (the workers
-- bound) without reading any other operation.
ALTER TABLE operations ADD COLUMN orchestration_id text;
CREATE INDEX operations_orchestration_running_idx ON operations (orchestration_id)
    WHERE orchestration_id IS NOT NULL AND state = 'in progress';

-- The maintenance window of a runtime, resolved at provisioning from the
-- plan and region configuration: time of day in UTC, "HH:MM:SS"; empty for
-- instances provisioned before windows existed (they get the default window).
ALTER TABLE instances ADD COLUMN maintenance_window_begin text NOT NULL DEFAULT '';
ALTER TABLE instances ADD COLUMN maintenance_window_end text NOT NULL DEFAULT '';

-- An orchestration is an operator's request to upgrade a set of runtimes.
CREATE TABLE orchestrations (
    orchestration_id text PRIMARY KEY,
    -- the operation type it runs on each runtime
    type             text NOT NULL CHECK (type IN ('upgrade_kyma', 'upgrade_cluster')),
    state            text NOT NULL CHECK (state IN ('pending', 'in progress', 'canceling', 'canceled', 'succeeded', 'failed')),
    description      text NOT NULL DEFAULT '',
    -- the request body, defaults applied
    parameters       jsonb NOT NULL,
    -- set once the targets were resolved and frozen as orchestration_operations
    resolved_at      timestamptz,
    job_id           bigint,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
CREATE INDEX orchestrations_created_idx ON orchestrations (created_at, orchestration_id);
CREATE INDEX orchestrations_state_idx ON orchestrations (type, state, created_at);
-- One orchestration of a kind runs at a time, whatever the number of
-- replicas: later ones wait pending.
CREATE UNIQUE INDEX orchestrations_one_running_per_type ON orchestrations (type)
    WHERE state IN ('in progress', 'canceling');

-- The frozen target list of an orchestration: one row per runtime, written
-- when the orchestration starts. operation_id is the ID the runtime's
-- upgrade operation gets when it is started (a retry gives it a new one).
CREATE TABLE orchestration_operations (
    orchestration_id  text NOT NULL REFERENCES orchestrations (orchestration_id) ON DELETE CASCADE,
    instance_id       text NOT NULL,
    operation_id      text NOT NULL UNIQUE,
    -- position in the frozen list: runtimes start in this order
    position          integer NOT NULL,
    state             text NOT NULL CHECK (state IN ('pending', 'in progress', 'succeeded', 'failed', 'canceled', 'skipped')),
    description       text NOT NULL DEFAULT '',
    runtime_id        text NOT NULL,
    global_account_id text NOT NULL,
    subaccount_id     text NOT NULL,
    plan_id           text NOT NULL,
    plan_name         text NOT NULL,
    region            text NOT NULL,
    shoot_name        text NOT NULL,
    maintenance_window_begin text NOT NULL,
    maintenance_window_end   text NOT NULL,
    -- the upgrade does not start before this time (maintenance windows)
    not_before        timestamptz NOT NULL,
    attempt           integer NOT NULL DEFAULT 1,
    previous_operation_ids text[] NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (orchestration_id, instance_id)
);
-- The scheduler's next candidates: pending rows of one orchestration in order.
CREATE INDEX orchestration_operations_pending_idx ON orchestration_operations (orchestration_id, not_before, position)
    WHERE state = 'pending';
CREATE INDEX orchestration_operations_list_idx ON orchestration_operations (orchestration_id, position);

-- +goose Down
DROP TABLE orchestration_operations;
DROP TABLE orchestrations;
ALTER TABLE instances DROP COLUMN maintenance_window_end;
ALTER TABLE instances DROP COLUMN maintenance_window_begin;
DROP INDEX operations_orchestration_running_idx;
ALTER TABLE operations DROP COLUMN orchestration_id;
DELETE FROM operations WHERE type IN ('upgrade_kyma', 'upgrade_cluster');
ALTER TABLE operations DROP CONSTRAINT operations_type_check;
ALTER TABLE operations ADD CONSTRAINT operations_type_check CHECK (type IN ('provision', 'deprovision', 'update'));
