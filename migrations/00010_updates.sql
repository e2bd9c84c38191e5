-- +goose Up
-- update_request is what a PATCH asked of a running runtime: the plan and
-- the parameters after the PATCH, and whether new credentials are to be
-- pushed. The instance keeps its recorded plan and parameters until the
-- update succeeds, so a failed update changes nothing the platform sees.
-- NULL for provisioning, deprovisioning and updates from before this column
-- (which pushed credentials only).
ALTER TABLE operations ADD COLUMN update_request jsonb;

-- instance_actions is an instance's history of changes operators should
-- see next to its operations (a plan change: old and new plan). Removed with
-- the instance.
CREATE TABLE instance_actions (
    action_id   bigserial PRIMARY KEY,
    instance_id text NOT NULL REFERENCES instances (instance_id) ON DELETE CASCADE,
    -- The operation that made the change: recording it twice (a worker
    -- re-running the success hook) writes one entry.
    operation_id text NOT NULL UNIQUE,
    type        text NOT NULL,
    message     text NOT NULL,
    old_value   text NOT NULL,
    new_value   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instance_actions_instance_idx ON instance_actions (instance_id, created_at);

-- +goose Down
DROP TABLE instance_actions;
ALTER TABLE operations DROP COLUMN update_request;
