-- +goose Up
-- An instance is what a platform asked for with PUT /v2/service_instances/{id}.
-- It is written in the same transaction as its first operation and is never
-- half-written: every NOT NULL column is known when the request is accepted.
CREATE TABLE instances (
    instance_id        text PRIMARY KEY,
    runtime_id         text NOT NULL DEFAULT '',
    global_account_id  text NOT NULL,
    subaccount_id      text NOT NULL,
    user_id            text NOT NULL,
    service_id         text NOT NULL,
    plan_id            text NOT NULL,
    plan_name          text NOT NULL,
    -- platform_region is the {region} path segment of /oauth/{region}/v2/...
    -- (or APP_BROKER_DEFAULT_REQUEST_REGION); provider_region is where the
    -- cluster runs.
    platform_region    text NOT NULL,
    provider           text NOT NULL DEFAULT '',
    provider_region    text NOT NULL DEFAULT '',
    -- parameters is the request's parameters as sent ({} when absent), used to
    -- tell an identical re-sent PUT (200/202) from a conflicting one (409).
    parameters         jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- context is the request's context WITHOUT sm_operator_credentials.
    context            jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- sm_operator_credentials, AES-GCM sealed with a key ID (see storage/crypto.go).
    encrypted_credentials text,
    dashboard_url      text NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    deleted_at         timestamptz
);

CREATE INDEX instances_global_account_idx ON instances (global_account_id);
CREATE INDEX instances_subaccount_idx ON instances (subaccount_id);
CREATE INDEX instances_created_at_idx ON instances (created_at, instance_id);
-- One trial per global account is a rule of the product; the database enforces
-- it so that two concurrent PUTs cannot both win.
CREATE UNIQUE INDEX instances_one_trial_per_global_account
    ON instances (global_account_id)
    WHERE plan_name = 'trial' AND deleted_at IS NULL;

-- An operation is one provisioning, deprovisioning or update of an instance.
CREATE TABLE operations (
    operation_id   text PRIMARY KEY,
    instance_id    text NOT NULL REFERENCES instances (instance_id) ON DELETE CASCADE,
    type           text NOT NULL CHECK (type IN ('provision', 'deprovision', 'update')),
    -- state uses OSB's words so last_operation needs no mapping:
    -- 'in progress', 'succeeded', 'failed'.
    state          text NOT NULL CHECK (state IN ('in progress', 'succeeded', 'failed')),
    description    text NOT NULL DEFAULT '',
    -- stage is the pipeline step the engine is at; finished_stages are
    -- checkpoints of steps that never run again.
    stage          text NOT NULL DEFAULT '',
    finished_stages text[] NOT NULL DEFAULT '{}',
    error_message  text NOT NULL DEFAULT '',
    -- deadline of the whole operation; stored so a restart does not reset it.
    deadline       timestamptz NOT NULL,
    data           jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz
);

CREATE INDEX operations_instance_created_idx ON operations (instance_id, created_at DESC);
CREATE INDEX operations_state_idx ON operations (state, type) WHERE state = 'in progress';
CREATE INDEX operations_created_at_idx ON operations (created_at);
-- At most one operation of an instance runs at a time: the broker relies on
-- this to answer 422 ConcurrencyError instead of racing.
CREATE UNIQUE INDEX operations_one_active_per_instance
    ON operations (instance_id)
    WHERE state = 'in progress';

-- +goose Down
DROP TABLE operations;
DROP TABLE instances;
